/**
 * The terminal view of a run: one block per wave with an aligned row per step, then reflections,
 * the outcome and the dead letters. Plain text (no colour codes), so it reads the same in a pipe.
 */
import type { IterationView, StepView, Timeline } from './timeline.ts';

const INPUT_WIDTH = 60;

/** The terminal view of a run's timeline (`--format terminal`). */
export function renderTerminal(t: Timeline): string {
  const out: string[] = [];
  const headline = t.outcome
    ? `${t.status.toUpperCase()}${t.status === 'in_progress' ? '' : ` (${t.outcome.reason_code})`} after ${t.outcome.iterations} wave(s)`
    : 'IN PROGRESS (no outcome yet)';
  out.push(`Run ${t.thought_id}${t.namespace ? `  namespace ${t.namespace}` : ''}  ${headline}`);
  if (t.bounds.from || t.bounds.to) out.push(`  time bounds: ${t.bounds.from ?? '-'} .. ${t.bounds.to ?? '-'}`);
  if (t.forked_from)
    out.push(
      `  forked from ${t.forked_from.thought_id} at ${t.forked_from.fork_point} (wave ${t.forked_from.iteration})${t.forked_from.overrides.length ? `, overrides ${t.forked_from.overrides.join(' ')}` : ''}${t.forked_from.flow ? `, flow ${t.forked_from.flow}` : ''}`,
    );
  for (const task of t.tasks) {
    out.push(
      `Task  ${task.at}  ${task.kind.padEnd(5)} ${JSON.stringify(task.text)}  source=${task.source}${task.external_id ? ` external_id=${task.external_id}` : ''}${Object.keys(task.metadata).length ? ` metadata=${JSON.stringify(task.metadata)}` : ''}${task.dead_letter ? `  DEAD-LETTERED ${task.dead_letter.code}` : ''}`,
    );
  }
  if (t.plan) {
    out.push(
      `Plan  ${t.plan.planner} ${t.plan.flow_id}@${t.plan.flow_version}: ${t.plan.steps.map((s) => `${s.id} ${s.tool}${s.depends_on.length ? ` <- ${s.depends_on.join(',')}` : ''} [${s.state}]`).join('; ')}`,
    );
  }
  // One set of column widths for every wave, so the columns line up down the whole run.
  const widths = columnWidths([STEP_HEADER, ...t.iterations.flatMap((it) => it.steps.map(stepRow))]);
  for (const it of t.iterations) out.push('', ...renderWave(it, widths));
  if (t.reflections.length) {
    out.push('', 'Reflections');
    for (const r of t.reflections) {
      const flagged = r.dimensions.filter((d) => d.result !== 'PASS');
      out.push(`  wave ${r.iteration} ${r.step_id} ${r.tool}: ${r.error_types.join(' > ')} -> ${r.action.toUpperCase()}`);
      for (const d of flagged) out.push(`      ${d.name} ${d.result}: ${cut(d.evidence, 160)} => ${d.recommendation}`);
    }
  }
  out.push('');
  if (t.outcomes.length === 0) out.push('Outcome  none yet');
  for (const o of t.outcomes) {
    out.push(`Outcome  ${o.at}  ${o.status.toUpperCase()} (${o.reason_code}) after ${o.iterations} wave(s), ${o.steps_executed} step(s) executed: ${o.reason}`);
    if (o.output !== null) out.push(`         output ${JSON.stringify(o.output)}`);
    if (o.missing_fields.length) out.push(`         missing ${o.missing_fields.join(', ')}`);
  }
  if (t.dead_letters.length) {
    out.push('', 'Dead letters');
    const rows = t.dead_letters.map((d) => [
      `${d.ref.topic}[${d.ref.partition}]@${d.ref.offset}`,
      d.code,
      d.source ? `from ${d.source.topic}[${d.source.partition}]@${d.source.offset}` : 'from ?',
      `by ${d.stage}`,
      `attempt ${d.attempt}`,
      cut(d.message, 120),
    ]);
    out.push(...table(rows).map((l) => `  ${l}`));
  }
  if (t.undecodable.length) {
    out.push('', 'Undecodable records of this run');
    for (const u of t.undecodable) out.push(`  ${u.ref.topic}[${u.ref.partition}]@${u.ref.offset}  ${u.code}: ${cut(u.message, 120)}`);
  }
  return out.join('\n') + '\n';
}

const STEP_HEADER = ['STEP', 'TOOL', 'STATUS', 'VERDICT', 'HTTP', 'LATENCY', 'TRIES', 'CONF', 'INPUT'];

function renderWave(it: IterationView, widths: number[]): string[] {
  const t = it.timings;
  const timing = [
    t.action_ms !== null ? `action ${t.action_ms} ms` : null,
    t.observation_ms !== null ? `observation ${t.observation_ms} ms` : null,
    t.thought_ms !== null ? `thought ${t.thought_ms} ms` : null,
  ]
    .filter(Boolean)
    .join(', ');
  const lines = [`Wave ${it.iteration}  requested ${it.requested_at ?? '?'}${timing ? `  (${timing})` : ''}`];
  for (const r of it.requests) {
    if (r.fork) lines.push(`  (first wave of a fork)`);
    if (r.dead_letter)
      lines.push(`  request ${r.ref.topic}[${r.ref.partition}]@${r.ref.offset} DEAD-LETTERED ${r.dead_letter.code}: ${cut(r.dead_letter.message, 120)}`);
    if (r.redriven_from) lines.push(`  request ${r.ref.topic}[${r.ref.partition}]@${r.ref.offset} re-driven from ${r.redriven_from}`);
  }
  lines.push(...table([STEP_HEADER, ...it.steps.map(stepRow)], widths).map((l) => `  ${l}`));
  for (const s of it.steps) {
    const notes: string[] = [];
    if (s.result?.fallback_from) notes.push(`fallback: served by ${s.result.tool} for ${s.result.fallback_from} (${s.result.fallback_reason ?? '?'})`);
    if (s.result?.error) notes.push(`error: ${s.result.error.type}: ${cut(s.result.error.message, 140)}`);
    for (const c of s.verdict?.checks.filter((c) => !c.passed) ?? []) notes.push(`check ${c.name} FAILED: ${cut(c.evidence, 160)}`);
    if (s.dead_letter) notes.push(`dead letter ${s.dead_letter.ref.topic}[${s.dead_letter.ref.partition}]@${s.dead_letter.ref.offset}`);
    for (const [k, v] of Object.entries(s.extra)) notes.push(`${k}: ${cut(JSON.stringify(v), 140)}`);
    for (const n of notes) lines.push(`    ${s.step_id}: ${n}`);
  }
  for (const [k, v] of Object.entries(it.extra)) lines.push(`  ${k}: ${cut(JSON.stringify(v), 160)}`);
  return lines;
}

function stepRow(s: StepView): string[] {
  const r = s.result;
  return [
    s.step_id,
    r && r.tool !== s.tool ? `${s.tool} -> ${r.tool}` : s.tool,
    s.status,
    s.verdict ? s.verdict.error_type : '-',
    r?.status_code != null ? String(r.status_code) : r?.error ? r.error.type : '-',
    r ? `${r.response_time_ms} ms` : '-',
    r ? String(r.attempts) : '-',
    s.verdict ? s.verdict.confidence.toFixed(2) : '-',
    cut(JSON.stringify(s.input), INPUT_WIDTH),
  ];
}

/** Left-aligned columns, two spaces apart; the last column is not padded. */
export function table(rows: string[][], widths: number[] = columnWidths(rows)): string[] {
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

function columnWidths(rows: string[][]): number[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return widths;
}

/** `text` on one line, cut to `width` characters with an ellipsis. */
export function cut(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
}

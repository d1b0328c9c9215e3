/**
 * The HTML report of a run: one self-contained page (inline CSS, the plan's DAG as inline SVG, no
 * scripts, no external assets), so it can be archived with an audit and opened offline.
 */
import type { ApprovalRequest } from '../schemas/types.gen.ts';
import { modelTurnView, type ModelTurnView } from './model-turn.ts';
import type { IterationView, PlanView, StepState, StepView, Timeline } from './timeline.ts';

const STATE_COLOURS: Record<StepState, string> = {
  verified: '#1f7a3a',
  failed: '#b3261e',
  skipped: '#6b6b6b',
  in_progress: '#2f5fb3',
  dead_lettered: '#b36b00',
  not_run: '#8a8a8a',
};
const STATUS_COLOURS: Record<string, string> = {
  completed: '#1f7a3a',
  failed: '#b3261e',
  escalated: '#b36b00',
  awaiting_input: '#2f5fb3',
  awaiting_approval: '#2f5fb3',
  budget_exhausted: '#b3261e',
  expired: '#8a8a8a',
  in_progress: '#2f5fb3',
};

/** The self-contained HTML report of a run (`--format html`): {@link renderReportBody} in a page with {@link REPORT_CSS}. */
export function renderHtml(t: Timeline): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(`Run ${t.thought_id}`)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
${renderReportBody(t)}
</body>
</html>
`;
}

/**
 * The report's content (header, sections, footer) without the page around it: the HTML report
 * and the operator console's run page (console/) both show a run through this one renderer.
 */
export function renderReportBody(t: Timeline): string {
  const title = `Run ${t.thought_id}`;
  return `<header>
  <h1>${esc(title)}</h1>
  <p class="status" data-status="${esc(t.status)}" style="background:${STATUS_COLOURS[t.status] ?? '#555'}">${esc(t.status.replace('_', ' '))}${t.outcome && t.outcome.reason_code !== t.status ? ` · ${esc(t.outcome.reason_code.replace('_', ' '))}` : ''}</p>
  <dl class="facts">
    ${fact('namespace', t.namespace || '(none)')}
    ${t.plan ? fact('plan', `${t.plan.planner} · ${t.plan.flow_id}@${t.plan.flow_version}`) : ''}
    ${fact('waves', String(t.iterations.length))}
    ${t.outcome ? fact('steps executed', String(t.outcome.steps_executed)) : ''}
    ${t.bounds.from || t.bounds.to ? fact('time bounds', `${t.bounds.from ?? '-'} .. ${t.bounds.to ?? '-'}`) : ''}
    ${t.forked_from ? fact('forked from', `${t.forked_from.thought_id} at ${t.forked_from.fork_point}${t.forked_from.overrides.length ? ` with ${t.forked_from.overrides.join(' ')}` : ''}${t.forked_from.flow ? ` on flow ${t.forked_from.flow}` : ''}`) : ''}
  </dl>
</header>
<main>
${t.tasks.length ? `<section id="tasks"><h2>Tasks</h2><table><thead><tr><th>at</th><th>kind</th><th>text</th><th>source</th><th>metadata</th></tr></thead><tbody>${t.tasks.map((task) => `<tr class="task"><td>${esc(task.at)}</td><td>${esc(task.kind)}</td><td>${esc(task.text)}${task.dead_letter ? ` <span class="tag dlq">dead-lettered ${esc(task.dead_letter.code)}</span>` : ''}</td><td>${esc(task.source)}${task.external_id ? ` · ${esc(task.external_id)}` : ''}</td><td><code>${esc(JSON.stringify(task.metadata))}</code></td></tr>`).join('')}</tbody></table></section>` : ''}
${t.plan ? `<section id="plan"><h2>Plan</h2>${dagSvg(t.plan)}${legend()}</section>` : ''}
<section id="timeline"><h2>Timeline</h2>
${t.iterations.map((it) => wave(it, t)).join('\n') || '<p>No wave was requested.</p>'}
</section>
${t.reflections.length ? `<section id="reflections"><h2>Reflections</h2>${t.reflections.map((r) => `<div class="reflection" data-step="${esc(r.step_id)}"><h3>Wave ${r.iteration} · ${esc(r.step_id)} ${esc(r.tool)} · ${esc(r.error_types.join(' › '))} → <strong>${esc(r.action)}</strong></h3><table><thead><tr><th>dimension</th><th>result</th><th>evidence</th><th>recommendation</th></tr></thead><tbody>${r.dimensions.map((d) => `<tr class="dim-${esc(d.result.toLowerCase())}"><td>${esc(d.name)}</td><td>${esc(d.result)}</td><td>${esc(d.evidence)}</td><td>${esc(d.recommendation)}</td></tr>`).join('')}</tbody></table></div>`).join('')}</section>` : ''}
<section id="outcome"><h2>Outcome</h2>
${t.outcomes.length ? t.outcomes.map((o) => `<div class="outcome" style="border-color:${STATUS_COLOURS[o.status] ?? '#555'}"><p><strong>${esc(o.status)}</strong> (${esc(o.reason_code)}) at ${esc(o.at)} after ${o.iterations} wave(s), ${o.steps_executed} step(s): ${esc(o.reason)}</p>${o.output !== null ? `<pre>${esc(JSON.stringify(o.output, null, 2))}</pre>` : ''}${o.missing_fields.length ? `<p>Missing: ${esc(o.missing_fields.join(', '))}</p>` : ''}${approvalTable(o.extra['approval'] as ApprovalRequest | null | undefined)}</div>`).join('') : '<p>No outcome yet.</p>'}
</section>
${t.dead_letters.length ? `<section id="dead-letters"><h2>Dead letters</h2><table><thead><tr><th>dead letter</th><th>code</th><th>from</th><th>stage</th><th>message</th><th>original</th></tr></thead><tbody>${t.dead_letters.map((d) => `<tr class="dead-letter"><td>${esc(`${d.ref.topic}[${d.ref.partition}]@${d.ref.offset}`)}</td><td>${esc(d.code)}</td><td>${d.source ? esc(`${d.source.topic}[${d.source.partition}]@${d.source.offset}`) : '?'}</td><td>${esc(d.stage)} (attempt ${d.attempt})</td><td>${esc(d.message)}</td><td>${d.original.value !== null ? `<details><summary>decoded</summary><pre>${esc(JSON.stringify(d.original.value, null, 2))}</pre></details>` : `<code>${esc(d.original.utf8)}</code>`}</td></tr>`).join('')}</tbody></table></section>` : ''}
${t.state ? `<section id="state"><h2>Run state</h2><details><summary>latest run state</summary><pre>${esc(JSON.stringify(t.state, null, 2))}</pre></details></section>` : ''}
</main>
<footer>tao replay · format ${esc(t.format)} · ${t.scanned.length} partition range(s) read</footer>`;
}

/** A parking outcome's calls awaiting a person (outcome field `approval`), and what was decided. */
function approvalTable(approval: ApprovalRequest | null | undefined): string {
  const calls = approval?.calls;
  if (!approval || !calls?.length) return '';
  const timeout = approval.timeout_ms;
  return `<table class="approval"><caption>Calls awaiting approval${timeout ? ` (the approval times out ${timeout % 3600000 === 0 ? `${timeout / 3600000} h` : `${Math.round(timeout / 1000)} s`} after this outcome)` : ''}</caption><thead><tr><th>interrupt</th><th>step</th><th>tool</th><th>arguments</th><th>why</th><th>decision</th></tr></thead><tbody>${calls
    .map(
      (c) =>
        `<tr class="approval-call" data-step="${esc(c.step_id)}" data-interrupt="${esc(c.interrupt_id ?? '')}" data-tool="${esc(c.tool)}" data-arguments="${esc(c.input_json)}" data-decision="${esc(c.decision ?? 'pending')}"><td><code>${esc(c.interrupt_id ?? '–')}</code></td><td>${esc(c.step_id)}</td><td>${esc(c.tool)}</td><td><code>${esc(c.input_json)}</code>${c.edited_input_json ? `<br>edited to <code class="edited">${esc(c.edited_input_json)}</code>` : ''}</td><td>${esc(c.why)}<br><small>${esc(c.rule)}</small></td><td>${c.decision ? `${esc(c.decision)}${c.edited_input_json ? ' with edits' : ''} by ${esc(c.decided_by ?? '?')}` : 'pending'}</td></tr>`,
    )
    .join('')}</tbody></table>`;
}

function wave(it: IterationView, t: Timeline): string {
  const tm = it.timings;
  const timing = [
    tm.action_ms !== null ? `action ${tm.action_ms} ms` : '',
    tm.observation_ms !== null ? `observation ${tm.observation_ms} ms` : '',
    tm.thought_ms !== null ? `thought ${tm.thought_ms} ms` : '',
  ]
    .filter(Boolean)
    .join(' · ');
  const notes = it.requests
    .map((r) =>
      r.dead_letter
        ? `<p class="note dlq">Request ${esc(`${r.ref.topic}[${r.ref.partition}]@${r.ref.offset}`)} was dead-lettered: ${esc(r.dead_letter.code)} ${esc(r.dead_letter.message)}</p>`
        : r.redriven_from
          ? `<p class="note">Re-driven from ${esc(r.redriven_from)}</p>`
          : r.fork
            ? '<p class="note">First wave of this fork.</p>'
            : '',
    )
    .join('');
  return `<div class="wave" id="wave-${it.iteration}">
<h3>Wave ${it.iteration} <small>${esc(it.requested_at ?? '')}${timing ? ` · ${esc(timing)}` : ''}</small></h3>${notes}
<table class="steps"><colgroup><col style="width:6%"><col style="width:17%"><col style="width:10%"><col style="width:11%"><col style="width:6%"><col style="width:8%"><col style="width:7%"><col style="width:8%"><col></colgroup><thead><tr><th>step</th><th>tool</th><th>status</th><th>verdict</th><th>HTTP</th><th>latency</th><th>tries</th><th>confidence</th><th>input</th></tr></thead>
<tbody>${it.steps.map((s) => stepRow(s, t)).join('')}</tbody></table></div>`;
}

function stepRow(s: StepView, t: Timeline): string {
  const r = s.result;
  const turn = modelTurnView(s, t);
  const failed = s.verdict?.checks.filter((c) => !c.passed) ?? [];
  const details = [
    r?.fallback_from
      ? `<li>fallback: served by <code>${esc(r.tool)}</code> for <code>${esc(r.fallback_from)}</code> (${esc(r.fallback_reason ?? '')})</li>`
      : '',
    r?.error ? `<li>error ${esc(r.error.type)}: ${esc(r.error.message)}</li>` : '',
    ...(s.verdict?.checks ?? []).map((c) => `<li class="${c.passed ? 'pass' : 'fail'}">${c.passed ? '✔' : '✘'} ${esc(c.name)}: ${esc(c.evidence)}</li>`),
    s.dead_letter
      ? `<li class="fail">dead letter ${esc(`${s.dead_letter.ref.topic}[${s.dead_letter.ref.partition}]@${s.dead_letter.ref.offset}`)}: ${esc(s.dead_letter.code)}</li>`
      : '',
    ...Object.entries(s.extra).map(([k, v]) => `<li>${esc(k)}: <code>${esc(JSON.stringify(v))}</code></li>`),
  ].filter(Boolean);
  return `<tr class="step ${esc(s.status)}" id="step-${s.iteration}-${esc(s.step_id)}" data-step="${esc(s.step_id)}" data-iteration="${s.iteration}">
<td><strong>${esc(s.step_id)}</strong></td><td><code>${esc(s.tool)}</code>${r && r.tool !== s.tool ? ` → <code>${esc(r.tool)}</code>` : ''}</td>
<td><span class="tag ${esc(s.status)}">${esc(s.status.replace('_', ' '))}</span></td><td>${s.verdict ? esc(s.verdict.error_type) : '–'}${failed.length ? ` <small>(${esc(failed.map((c) => c.name).join(', '))})</small>` : ''}</td>
<td>${r ? esc(r.status_code !== null ? String(r.status_code) : (r.error?.type ?? '–')) : '–'}</td><td>${r ? `${r.response_time_ms} ms` : '–'}</td><td>${r ? `${r.attempts}${r.retries ? ` (${r.retries} retr${r.retries === 1 ? 'y' : 'ies'})` : ''}` : '–'}</td><td>${s.verdict ? s.verdict.confidence.toFixed(2) : '–'}</td>
<td>${turn ? modelTurn(turn) : `<code>${esc(JSON.stringify(s.input))}</code>`}${details.length ? `<details><summary>audit</summary><ul>${details.join('')}</ul></details>` : ''}</td></tr>`;
}

/** A model turn, collapsed: the request, the raw answer, tokens and model, and what Thought made of it. */
function modelTurn(v: ModelTurnView): string {
  const tokens = v.usage ? `${v.usage.total_tokens} tokens` : 'no usage';
  const summary = `model turn · ${v.request.messages.length} messages · ${v.request.tools.length} tools · ${v.model ?? 'model ?'} · ${tokens}`;
  const message = (m: ModelTurnView['request']['messages'][number]) =>
    `<div class="msg role-${esc(m.role)}"><span class="role">${esc(m.role)}${m.tool_call_id ? ` · ${esc(m.tool_call_id)}` : ''}</span>${m.content !== null ? `<pre>${esc(m.content)}</pre>` : ''}${m.tool_calls.map((c) => `<p class="call">→ <code>${esc(c.name)}</code> <code>${esc(c.arguments)}</code> <small>${esc(c.id)}</small></p>`).join('')}</div>`;
  const d = v.decision;
  const decision =
    d.kind === 'tool_calls'
      ? `<p>The next wave: ${d.calls.length} tool call(s).</p><ul>${d.calls.map((c) => `<li><strong>${esc(c.step_id ?? '(not run)')}</strong> <code>${esc(c.tool)}</code> <code>${esc(JSON.stringify(c.arguments))}</code>${c.status ? ` <span class="tag ${esc(c.status)}">${esc(c.status.replace('_', ' '))}</span>` : ''}</li>`).join('')}</ul>`
      : d.kind === 'final'
        ? `<p>The final answer:</p><pre class="final">${esc(d.answer)}</pre>`
        : d.kind === 'plan'
          ? `<p>A plan of ${d.steps.length} step(s):</p><ul>${d.steps.map((x) => `<li><strong>${esc(x.id)}</strong> <code>${esc(x.tool)}</code>${x.depends_on.length ? ` after ${esc(x.depends_on.join(', '))}` : ''}</li>`).join('')}</ul><p>Output: <code>${esc(JSON.stringify(d.output))}</code></p>`
          : d.kind === 'reflection'
            ? `<p>A reflection: <strong>${esc(d.action)}</strong>. ${esc(d.reason)}</p>`
            : d.kind === 'rejected'
              ? `<p class="fail">Rejected by Observation's gate (${esc(d.error_type)}): ${esc(d.evidence)}. The model hears why in its next turn.</p>`
              : '<p>No verified answer yet.</p>';
  return `<details class="model-turn" data-step="${esc(v.step_id)}"><summary>${esc(summary)}</summary>
<h4>Request</h4><table class="params"><tbody>${Object.entries(v.request.parameters)
    .map(([k, val]) => `<tr><th>${esc(k)}</th><td><code>${esc(JSON.stringify(val))}</code></td></tr>`)
    .join('')}</tbody></table>
${v.request.hidden.length ? `<p class="note">Not shown: ${esc(v.request.hidden.join(', '))}.</p>` : ''}
<p>Tools offered: ${v.request.tools.length ? v.request.tools.map((x) => `<code title="${esc(x.description)}">${esc(x.name)}</code>`).join(' ') : 'none'}</p>
${v.sections ? `<table class="params sections"><thead><tr><th>prompt section</th><th>tokens (estimated)</th><th>share</th></tr></thead><tbody>${v.sections.rows.map((r) => `<tr><td>${esc(r.section)}</td><td>${r.tokens}</td><td><span class="share" style="width:${Math.round(r.share * 80)}px"></span> ${(r.share * 100).toFixed(1)}%</td></tr>`).join('')}</tbody></table>${v.sections.window !== null ? `<p class="note">Window ${v.sections.window} tokens.</p>` : ''}` : ''}
<div class="messages">${v.request.messages.map(message).join('')}</div>
<h4>Answer</h4><p>model <code>${esc(v.model ?? '?')}</code>${v.usage ? ` · prompt ${v.usage.prompt_tokens} + completion ${v.usage.completion_tokens} = ${v.usage.total_tokens} tokens` : ''}</p>
${v.raw_answer !== null ? `<pre class="raw">${esc(v.raw_answer)}</pre>` : '<p>No answer recorded.</p>'}
<h4>What Thought made of it</h4><div class="decision">${decision}</div></details>`;
}

/** The plan as a layered DAG: columns by dependency depth, edges from each dependency to its dependant. */
export function dagSvg(plan: PlanView): string {
  const depth = new Map<string, number>();
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  const depthOf = (id: string, seen: Set<string> = new Set()): number => {
    if (depth.has(id)) return depth.get(id)!;
    // A cycle can't pass plan validation; guard anyway so a corrupt record still renders.
    if (seen.has(id)) return 0;
    seen.add(id);
    const deps = byId.get(id)?.depends_on.filter((d) => byId.has(d)) ?? [];
    const d = deps.length ? 1 + Math.max(...deps.map((x) => depthOf(x, seen))) : 0;
    depth.set(id, d);
    return d;
  };
  plan.steps.forEach((s) => depthOf(s.id));
  const columns = new Map<number, string[]>();
  for (const s of plan.steps) columns.set(depth.get(s.id)!, [...(columns.get(depth.get(s.id)!) ?? []), s.id]);
  const W = 190;
  const H = 54;
  const GX = 70;
  const GY = 26;
  const pad = 16;
  const rows = Math.max(1, ...[...columns.values()].map((c) => c.length));
  const width = pad * 2 + columns.size * W + (columns.size - 1) * GX;
  const height = pad * 2 + rows * H + (rows - 1) * GY;
  const pos = new Map<string, { x: number; y: number }>();
  for (const [col, ids] of columns) {
    const offset = ((rows - ids.length) * (H + GY)) / 2;
    ids.forEach((id, i) => pos.set(id, { x: pad + col * (W + GX), y: pad + offset + i * (H + GY) }));
  }
  const edges = plan.steps.flatMap((s) =>
    s.depends_on
      .filter((d) => pos.has(d))
      .map((d) => {
        const a = pos.get(d)!;
        const b = pos.get(s.id)!;
        const x1 = a.x + W;
        const y1 = a.y + H / 2;
        const x2 = b.x - 4;
        const y2 = b.y + H / 2;
        const mid = (x1 + x2) / 2;
        return `<path class="edge" d="M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}" marker-end="url(#arrow)"><title>${esc(d)} → ${esc(s.id)}</title></path>`;
      }),
  );
  const nodes = plan.steps.map((s) => {
    const p = pos.get(s.id)!;
    const colour = STATE_COLOURS[s.state];
    return `<g class="node" data-step="${esc(s.id)}" transform="translate(${p.x},${p.y})"><title>${esc(`${s.id} ${s.tool}: ${s.state}, ${s.attempts} wave(s); input ${JSON.stringify(s.input)}`)}</title><rect width="${W}" height="${H}" rx="8" fill="#fff" stroke="${colour}" stroke-width="2.5"/><rect width="8" height="${H}" rx="3" fill="${colour}"/><text x="18" y="22" class="id">${esc(s.id)}</text><text x="18" y="41" class="tool">${esc(clip(s.tool, 24))}</text><text x="${W - 10}" y="22" class="state" text-anchor="end" fill="${colour}">${esc(s.state.replace('_', ' '))}</text></g>`;
  });
  return `<svg class="dag" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="plan DAG"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>${edges.join('')}${nodes.join('')}</svg>`;
}

function legend(): string {
  return `<p class="legend">${(Object.keys(STATE_COLOURS) as StepState[]).map((s) => `<span><i style="background:${STATE_COLOURS[s]}"></i>${esc(s.replace('_', ' '))}</span>`).join('')}</p>`;
}

function fact(name: string, value: string): string {
  return `<div><dt>${esc(name)}</dt><dd>${esc(value)}</dd></div>`;
}

function clip(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** Escapes text for HTML element content and double-quoted attributes. */
export function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** The report's style sheet (inline in the HTML report; served to the console's run page). */
export const REPORT_CSS = `
:root{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;background:#f6f7f9}
body{margin:0}
header{background:#fff;border-bottom:1px solid #dde1e6;padding:18px 28px}
h1{font-size:20px;margin:0 0 8px;font-family:ui-monospace,Menlo,Consolas,monospace}
h2{font-size:16px;margin:26px 0 10px;text-transform:uppercase;letter-spacing:.04em;color:#444}
h3{font-size:15px;margin:0 0 8px}
h3 small{font-weight:normal;color:#666}
main{padding:0 28px 28px}
.status{display:inline-block;color:#fff;border-radius:14px;padding:3px 12px;margin:0 0 10px;font-weight:600;text-transform:uppercase;font-size:12px;letter-spacing:.05em}
.facts{display:flex;flex-wrap:wrap;gap:6px 26px;margin:0}
.facts div{display:flex;gap:6px}
.facts dt{color:#666}.facts dd{margin:0;font-weight:500}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
table.steps{table-layout:fixed}table.steps td{overflow-wrap:anywhere}
th,td{border:1px solid #e3e6ea;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
pre{background:#fff;border:1px solid #e3e6ea;padding:10px;overflow:auto;margin:6px 0}
.wave{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:12px 14px;margin:0 0 14px}
.tag{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;color:#fff;background:#777;white-space:nowrap}
.tag.verified{background:#1f7a3a}.tag.invalid{background:#b3261e}.tag.dead_lettered,.tag.dlq{background:#b36b00}.tag.awaiting_result,.tag.awaiting_verdict{background:#2f5fb3}
tr.step.invalid td:first-child{border-left:4px solid #b3261e}tr.step.verified td:first-child{border-left:4px solid #1f7a3a}tr.step.dead_lettered td:first-child{border-left:4px solid #b36b00}
details summary{cursor:pointer;color:#2f5fb3;font-size:12px;margin-top:4px}
ul{margin:6px 0;padding-left:18px}li{margin:2px 0}li.fail{color:#b3261e}li.pass{color:#1f5f33}
.note{margin:4px 0 8px;font-size:13px;color:#444}.note.dlq{color:#8a5200}
.reflection{background:#fff;border:1px solid #dde1e6;border-left:4px solid #b36b00;border-radius:6px;padding:10px 12px;margin:0 0 10px}
tr.dim-missing td:nth-child(2),tr.dim-inconsistent td:nth-child(2){color:#b3261e;font-weight:600}
.outcome{background:#fff;border:1px solid;border-left-width:6px;border-radius:6px;padding:8px 14px;margin:0 0 10px}
svg.dag{background:#fff;border:1px solid #dde1e6;border-radius:8px;max-width:100%;height:auto}
svg .edge{fill:none;stroke:#666;stroke-width:1.6}
svg text{font-family:system-ui,sans-serif}svg .id{font-weight:700;font-size:14px}svg .tool{font-family:ui-monospace,Menlo,monospace;font-size:12px;fill:#333}svg .state{font-size:11px;font-weight:600}
.legend{display:flex;gap:16px;font-size:12px;color:#444}.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:middle}
details.model-turn h4{font-size:13px;margin:10px 0 4px}table.params{width:auto}.msg{border-left:3px solid #c8ced6;padding:2px 8px;margin:4px 0}.msg .role{font-size:11px;font-weight:600;text-transform:uppercase;color:#555}.msg.role-system{border-color:#8a8a8a}.msg.role-user{border-color:#2f5fb3}.msg.role-assistant{border-color:#1f7a3a}.msg.role-tool{border-color:#b36b00}.msg pre{white-space:pre-wrap;max-height:16em}p.call{margin:2px 0}.decision .fail{color:#b3261e}
footer{color:#888;font-size:12px;padding:10px 28px 24px}
.share{display:inline-block;height:8px;background:#2f5fb3;border-radius:2px;vertical-align:middle}
table.approval{margin:8px 0}table.approval caption{text-align:left;font-weight:600;padding:4px 0}tr.approval-call[data-decision=pending] td:last-child{color:#2f5fb3;font-weight:600}tr.approval-call[data-decision=deny] td:last-child,tr.approval-call[data-decision=timeout] td:last-child{color:#b3261e}
`;

/** Terminal views of the verify report and of dead-letter listings. */
import type { DlqEntry, DlqListing, RedriveReport } from './dlq.ts';
import { cut, table } from './render-terminal.ts';
import { parseJson, refKey } from './record-format.ts';
import type { VerifyReport } from './verify.ts';

const COLUMN = 70;
const MAX_LINES = 80;

/** `--verify` for people: no drift, or the first divergence with the differing fields and both versions side by side. */
export function renderVerify(r: VerifyReport): string {
  const head = `Verify ${r.thought_id}: re-decided ${r.checked.thought_inputs} Thought input(s) and ${r.checked.observation_inputs} Observation input(s), compared ${r.checked.records_compared} record(s) with today's code and configuration`;
  const out = [head];
  const configuration = r.configuration_drift ?? [];
  if (configuration.length) {
    out.push("CONFIGURATION DRIFT: the run was made with a configuration today's does not have:");
    out.push(...table([['SETTING', 'RECORDED', 'TODAY'], ...configuration.map((c) => [c.setting, c.recorded, c.today ?? '(none)'])]).map((l) => `  ${l}`));
    out.push(...configuration.map((c) => `  - ${c.explanation}`), '');
  }
  const d = r.first_divergence;
  if (!d)
    out.push(
      configuration.length
        ? 'Decisions: today decides every recorded input as recorded, despite the configuration drift.'
        : 'NO DRIFT: today decides every recorded input as recorded.',
    );
  else {
    out.push(
      `${configuration.length ? 'DECISIONS DIFFER (with the configuration drift above, not necessarily a code change)' : 'CODE DRIFT'} (${d.code}) in ${d.stage}: ${d.explanation}`,
    );
    out.push(`  input     ${d.input.summary} at ${refKey(d.input.ref)}`);
    out.push(`  recorded  ${d.recorded ? `${d.recorded.topic} at ${refKey(d.recorded.ref)}` : '(nothing)'}`);
    out.push(`  today     ${d.today ? d.today.topic : '(nothing)'}`);
    if (d.diff.length) {
      out.push('', 'Fields that differ:');
      out.push(
        ...table([['FIELD', 'RECORDED', 'TODAY'], ...d.diff.map((f) => [f.path, cut(show(f.recorded), 60), cut(show(f.today), 60)])]).map((l) => `  ${l}`),
      );
    }
    out.push('', ...sideBySide(d.recorded?.value ?? null, d.today?.value ?? null));
  }
  if (r.notes.length) out.push('', 'Notes:', ...r.notes.map((n) => `  - ${n}`));
  return out.join('\n') + '\n';
}

/**
 * Both versions pretty-printed in two columns, aligned by a line diff and cut to the stretches
 * that differ (with a few lines of context); `|` marks a changed line, `<` and `>` a line on one
 * side only.
 */
function sideBySide(recorded: unknown, today: unknown): string[] {
  const rows = alignLines(pretty(recorded), pretty(today));
  const changed = rows.map((r, i) => (r.mark !== ' ' ? i : -1)).filter((i) => i >= 0);
  const keep = new Set(changed.flatMap((i) => Array.from({ length: 2 * CONTEXT + 1 }, (_, k) => i - CONTEXT + k)));
  const lines = [`${'RECORDED'.padEnd(COLUMN)}   TODAY`];
  let skipped = false;
  let shown = 0;
  for (let i = 0; i < rows.length; i++) {
    if (!keep.has(i)) {
      skipped = true;
      continue;
    }
    if (skipped) lines.push(`${'…'.padEnd(COLUMN)}   …`);
    skipped = false;
    if (shown++ >= MAX_LINES) {
      lines.push(`… more differences; --format json has both versions in full`);
      break;
    }
    const r = rows[i]!;
    lines.push(`${clip(r.left).padEnd(COLUMN)} ${r.mark} ${clip(r.right)}`);
  }
  if (skipped) lines.push(`${'…'.padEnd(COLUMN)}   …`);
  return lines;
}

const CONTEXT = 3;

/** Lines of two texts paired by their longest common subsequence. */
function alignLines(a: string[], b: string[]): Array<{ left: string; right: string; mark: ' ' | '|' | '<' | '>' }> {
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const rows: Array<{ left: string; right: string; mark: ' ' | '|' | '<' | '>' }> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      rows.push({ left: a[i++]!, right: b[j++]!, mark: ' ' });
    } else if (i < n && j < m && lcs[i + 1]![j + 1] === lcs[i]![j]) {
      // Neither line is part of the common run here: they are the same line, changed.
      rows.push({ left: a[i++]!, right: b[j++]!, mark: '|' });
    } else if (j >= m || (i < n && lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      rows.push({ left: a[i++]!, right: '', mark: '<' });
    } else {
      rows.push({ left: '', right: b[j++]!, mark: '>' });
    }
  }
  return rows;
}

/** JSON texts inside the record (plan, outputs, inputs) are expanded and keys sorted, so both versions' fields line up. */
function pretty(value: unknown): string[] {
  if (value === null) return ['(nothing)'];
  return JSON.stringify(sortKeys(expand(value)), null, 2).split('\n');
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  return value;
}

function expand(value: unknown): unknown {
  if (typeof value === 'string' && /^[[{]/.test(value.trimStart())) {
    const parsed = parseJson(value);
    return typeof parsed === 'string' ? parsed : expand(parsed);
  }
  if (Array.isArray(value)) return value.map(expand);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
  return value;
}

function clip(line: string): string {
  return line.length > COLUMN ? `${line.slice(0, COLUMN - 1)}…` : line;
}

function show(v: unknown): string {
  return v === undefined ? '(absent)' : JSON.stringify(v);
}

/** `tao dlq list` for people: counts by topic and reason, then one row per dead letter. */
export function renderDlqList(l: DlqListing): string {
  const out = [
    `Dead letters${l.namespace ? ` in namespace ${l.namespace}` : ''}${l.filters.topic ? `, topic ${l.filters.topic}` : ''}${l.filters.reason ? `, reason ${l.filters.reason}` : ''}: ${l.entries.length}`,
  ];
  if (l.counts.length) {
    out.push(
      '',
      ...table([['TOPIC', 'REASON', 'COUNT', 'RE-DRIVEN'], ...l.counts.map((c) => [c.topic, c.reason, String(c.count), String(c.redriven)])]).map(
        (s) => `  ${s}`,
      ),
    );
    out.push('', ...table([['DEAD LETTER', 'SOURCE', 'KEY', 'CODE', 'STAGE', 'RE-DRIVEN', 'MESSAGE'], ...l.entries.map(row)]).map((s) => `  ${s}`));
  }
  return out.join('\n') + '\n';
}

function row(e: DlqEntry): string[] {
  return [
    `${e.ref.topic}[${e.ref.partition}]@${e.ref.offset}`,
    e.source ? `${e.source.topic}[${e.source.partition}]@${e.source.offset}` : '?',
    e.key ?? '(null)',
    e.code,
    e.stage,
    e.redriven ? 'yes' : 'no',
    cut(e.message, 100),
  ];
}

/** `tao dlq show` for people: the error, the headers and the original record (decoded, or previewed as bytes). */
export function renderDlqShow(e: DlqEntry): string {
  const out = [`Dead letter ${e.ref.topic}[${e.ref.partition}]@${e.ref.offset}  ${new Date(e.timestamp).toISOString()}${e.redriven ? '  (re-driven)' : ''}`];
  out.push(
    `  key      ${e.key ?? '(null)'}`,
    `  reason   ${e.code} (${e.errorClass}) by ${e.stage}, attempt ${e.attempt}`,
    `  message  ${e.message}`,
    `  source   ${e.source ? `${e.source.topic}[${e.source.partition}]@${e.source.offset}` : '(unknown)'}`,
  );
  out.push('', 'Headers:', ...table(Object.entries(e.headers).map(([k, v]) => [k, v])).map((s) => `  ${s}`));
  out.push('', `Original record (${e.original.bytes} bytes${e.original.schemaId !== null ? `, schema id ${e.original.schemaId}` : ''}):`);
  if (e.original.value !== null)
    out.push(
      ...JSON.stringify(expand(e.original.value), null, 2)
        .split('\n')
        .map((s) => `  ${s}`),
    );
  else {
    out.push(`  does not decode: ${e.original.decodeError?.code}: ${e.original.decodeError?.message}`);
    out.push(`  hex   ${e.original.hex.replace(/(.{2})/g, '$1 ').trim()}${e.original.bytes * 2 > e.original.hex.length ? ' …' : ''}`);
    out.push(`  utf8  ${e.original.utf8}`);
  }
  return out.join('\n') + '\n';
}

/** `tao dlq redrive` for people: what was re-driven now, before, or not found. */
export function renderRedrive(r: RedriveReport): string {
  const out = [
    `Re-drive of ${r.topic}: ${r.redriven.length} re-driven now, ${r.already.length} re-driven before (skipped)${r.missing.length ? `, ${r.missing.length} not found` : ''}`,
  ];
  for (const x of r.redriven) out.push(`  ${refKey(x.from)} -> ${x.to.topic}[${x.to.partition}]  key ${x.key ?? '(null)'}  (${x.code})`);
  for (const x of r.already) out.push(`  ${refKey(x)} already re-driven`);
  for (const x of r.missing) out.push(`  ${refKey(x)} is not a dead letter of ${r.topic}`);
  return out.join('\n') + '\n';
}

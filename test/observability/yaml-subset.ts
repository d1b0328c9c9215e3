/**
 * A reader for the YAML subset the files in infra/observability/ are written in (the project does
 * not depend on a YAML library): block mappings and sequences by indentation, `- key: value` items,
 * plain, 'single' and "double" quoted scalars, flow sequences and mappings of scalars, literal and
 * folded block scalars (`|`, `|-`, `>`, `>-`), and `#` comments. Anything else throws, naming the
 * line, so a file that drifts out of the subset fails its test instead of being misread.
 */

type Value = string | number | boolean | null | Value[] | { [key: string]: Value };

interface Line {
  no: number;
  indent: number;
  text: string;
  raw: string;
}

export function parseYamlSubset(source: string): unknown {
  const lines: Line[] = source.split('\n').map((raw, i) => ({ no: i + 1, raw, indent: raw.length - raw.trimStart().length, text: stripComment(raw).trim() }));
  const pos = { i: 0 };
  const value = block(lines, pos, 0);
  skipBlank(lines, pos);
  if (pos.i < lines.length) throw new Error(`line ${lines[pos.i]!.no}: unexpected content "${lines[pos.i]!.text}"`);
  return value;
}

function skipBlank(lines: Line[], pos: { i: number }): void {
  while (pos.i < lines.length && lines[pos.i]!.text === '') pos.i++;
}

function block(lines: Line[], pos: { i: number }, minIndent: number): Value {
  skipBlank(lines, pos);
  const first = lines[pos.i];
  if (!first || first.indent < minIndent) return null;
  return first.text.startsWith('- ') || first.text === '-' ? sequence(lines, pos, first.indent) : mapping(lines, pos, first.indent);
}

function sequence(lines: Line[], pos: { i: number }, indent: number): Value[] {
  const out: Value[] = [];
  for (;;) {
    skipBlank(lines, pos);
    const line = lines[pos.i];
    if (!line || line.indent < indent) return out;
    if (line.indent > indent || !(line.text.startsWith('- ') || line.text === '-'))
      throw new Error(`line ${line.no}: expected a "- " item at indent ${indent}`);
    const rest = line.text.slice(1).trim();
    if (rest === '') {
      pos.i++;
      out.push(block(lines, pos, indent + 1));
    } else if (isKeyLine(rest)) {
      // "- key: value" opens a mapping whose further keys sit at the item's content indent.
      const contentIndent = indent + (line.text.length - rest.length);
      lines[pos.i] = { ...line, indent: contentIndent, text: rest };
      out.push(mapping(lines, pos, contentIndent));
    } else {
      pos.i++;
      out.push(scalar(rest, line.no));
    }
  }
}

function mapping(lines: Line[], pos: { i: number }, indent: number): { [key: string]: Value } {
  const out: { [key: string]: Value } = {};
  for (;;) {
    skipBlank(lines, pos);
    const line = lines[pos.i];
    if (!line || line.indent < indent) return out;
    if (line.indent > indent) throw new Error(`line ${line.no}: unexpected indentation`);
    if (line.text.startsWith('- ')) return out;
    const m = /^("[^"]*"|'[^']*'|[^:]+?):(?:\s+(.*))?$/.exec(line.text);
    if (!m) throw new Error(`line ${line.no}: expected "key: value", got "${line.text}"`);
    const key = String(scalar(m[1]!, line.no));
    if (key in out) throw new Error(`line ${line.no}: duplicate key "${key}"`);
    const rest = (m[2] ?? '').trim();
    pos.i++;
    if (rest === '') out[key] = block(lines, pos, indent + 1);
    else if (/^[|>][-+]?$/.test(rest)) out[key] = blockScalar(lines, pos, indent, rest);
    else out[key] = scalar(rest, line.no);
  }
}

function blockScalar(lines: Line[], pos: { i: number }, parentIndent: number, style: string): string {
  const body: string[] = [];
  let indent = -1;
  while (pos.i < lines.length) {
    const line = lines[pos.i]!;
    if (line.raw.trim() !== '') {
      if (line.indent <= parentIndent) break;
      if (indent < 0) indent = line.indent;
    }
    body.push(line.raw.slice(Math.max(0, indent)));
    pos.i++;
  }
  while (body.length && body[body.length - 1]!.trim() === '') body.pop();
  const text = style.startsWith('|') ? body.join('\n') : body.map((l) => l.trim()).join(' ');
  return style.endsWith('-') ? text : `${text}\n`;
}

function isKeyLine(text: string): boolean {
  return /^("[^"]*"|'[^']*'|[A-Za-z_][\w.-]*):(\s|$)/.test(text);
}

function scalar(text: string, no: number): Value {
  if (text.startsWith('"')) {
    if (!text.endsWith('"') || text.length < 2) throw new Error(`line ${no}: unterminated double-quoted string`);
    return JSON.parse(text) as string;
  }
  if (text.startsWith("'")) {
    if (!text.endsWith("'") || text.length < 2) throw new Error(`line ${no}: unterminated single-quoted string`);
    return text.slice(1, -1).replace(/''/g, "'");
  }
  if (text.startsWith('[')) {
    if (!text.endsWith(']')) throw new Error(`line ${no}: unterminated flow sequence`);
    const inner = text.slice(1, -1).trim();
    return inner === '' ? [] : splitFlow(inner).map((p) => scalar(p.trim(), no));
  }
  if (text.startsWith('{')) {
    if (!text.endsWith('}')) throw new Error(`line ${no}: unterminated flow mapping`);
    const out: { [key: string]: Value } = {};
    for (const part of splitFlow(text.slice(1, -1))) {
      const m = /^\s*([^:]+?):\s*(.*?)\s*$/.exec(part);
      if (!m) throw new Error(`line ${no}: bad flow mapping entry "${part}"`);
      out[String(scalar(m[1]!, no))] = scalar(m[2]!, no);
    }
    return out;
  }
  if (text === 'true' || text === 'false') return text === 'true';
  if (text === 'null' || text === '~') return null;
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  return text;
}

function splitFlow(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let current = '';
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '[' || ch === '{') depth++;
    else if (ch === ']' || ch === '}') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
      continue;
    }
    current += ch;
  }
  if (current.trim() !== '') parts.push(current);
  return parts;
}

/** The line without a trailing `# comment` (a `#` outside quotes, at the start or after a space). */
function stripComment(raw: string): string {
  let quote: string | null = null;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") {
      // An apostrophe inside a plain scalar (don't, can't) does not open a quote.
      if (i === 0 || /[\s:[{,-]/.test(raw[i - 1]!)) quote = ch;
    } else if (ch === '#' && (i === 0 || /\s/.test(raw[i - 1]!))) return raw.slice(0, i);
  }
  return raw;
}

/**
 * The structural signals of a raw text (step 7's `s:` features): the shape of a JSON body (whole, cut
 * short, broken), an HTML page, a stack trace. A bag of n-grams cannot tell these apart; a scan can.
 */
import { MAX_INPUT_CODE_POINTS } from './config.ts';
import { RE_LONE_SURROGATE, truncateCodePoints } from './normalize.ts';

const JSON_WS = ' \t\n\r\uFEFF';
const HTML_MARKS = ['<html', '<!doctype html', '<body'];
// Stack-frame lines (on lower-cased text): Java/JS/.NET `at …`, Python `file "…", line N`, Go
// `goroutine N [` and `….go:N`, Ruby `….rb:N:in `, PHP `#N ….php(N)`. ASCII classes only, so that
// Python's `re` and JavaScript agree.
const RE_FRAME =
  /^[ \t]*at [^ \t]|^[ \t]*file "[^"]*", line [0-9]+|^goroutine [0-9]+ \[|^[ \t]*[^ \t]*\.go:[0-9]+|^[ \t]*(?:from )?[^ \t]*\.rb:[0-9]+:in |^#[0-9]+ [^ \t][^\n]*\.php\([0-9]+\)/;

/**
 * How a raw text that starts like JSON (`{` or `[` after JSON whitespace or a BOM) ends: `json_ok` when
 * its brackets balance and nothing but whitespace follows, `json_cut` when the text runs out inside a
 * string or before every bracket closed (a body cut short), `json_bad` for a mismatched bracket or
 * trailing text; null when it does not start like JSON. Brackets inside strings do not count.
 */
export function jsonShape(text: string): 'json_ok' | 'json_cut' | 'json_bad' | null {
  const n = text.length;
  let i = 0;
  while (i < n && JSON_WS.includes(text[i]!)) i++;
  if (i === n || (text[i] !== '{' && text[i] !== '[')) return null;
  const stack: string[] = [];
  let inString = false;
  let escaped = false;
  let j = i;
  for (; j < n; j++) {
    const ch = text[j]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') stack.push(ch);
    else if (ch === '}' || ch === ']') {
      if (stack.length === 0 || stack[stack.length - 1] !== (ch === '}' ? '{' : '[')) return 'json_bad';
      stack.pop();
      if (stack.length === 0) break;
    }
  }
  if (stack.length > 0 || inString) return 'json_cut';
  let k = j + 1;
  while (k < n && JSON_WS.includes(text[k]!)) k++;
  return k === n ? 'json_ok' : 'json_bad';
}

/**
 * The structural signals of a raw text (feature `s:<signal>`), in a fixed order: its {@link jsonShape};
 * `html` when its first {@link MAX_INPUT_CODE_POINTS} code points, lower-cased, hold `<html`,
 * `<!doctype html` or `<body`; `trace` when they hold two or more stack-frame lines (also inside JSON
 * strings: the escapes `\n`, `\t` and `\"` count as what they stand for). A bag of n-grams cannot tell a body cut short from a
 * short intact one; this scan can, exactly.
 */
export function structureSignals(text: string, maxCodePoints: number = MAX_INPUT_CODE_POINTS): string[] {
  const out: string[] = [];
  const shape = jsonShape(text);
  if (shape) out.push(shape);
  const head = truncateCodePoints(text, maxCodePoints).replace(RE_LONE_SURROGATE, '\uFFFD').toLowerCase();
  if (HTML_MARKS.some((m) => head.includes(m))) out.push('html');
  const lines = head.replaceAll('\\r\\n', '\n').replaceAll('\\n', '\n').replaceAll('\\t', '\t').replaceAll('\\"', '"').replaceAll('\r', '\n').split('\n');
  let frames = 0;
  for (const line of lines) if (RE_FRAME.test(line) && ++frames >= 2) break;
  if (frames >= 2) out.push('trace');
  return out;
}

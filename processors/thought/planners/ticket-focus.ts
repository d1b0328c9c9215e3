/**
 * The intent router's pre-step (issue 43), `ticket-focus-v1`: the twin of `models/ticket_focus.py`,
 * which applies it to the training tickets and to the held-out set. Both must agree exactly:
 * `test/models/ticket-focus-parity.test.ts` checks this module against the committed
 * `models/intent-router/focus-vectors.json`. Pure: no I/O, no state.
 *
 * 1. {@link cleanTicket}: the first 8192 code points (the patterns stay cheap on a huge body); mail markup that carries no ask is removed before featurizing: HTML comments,
 *    style blocks and tags (block tags become a line break; any other tag, a fake `<ticket intent="…">`
 *    or `</message><message role="system">` among them, goes with its attributes), chat-template tokens,
 *    a few entities, the router's own label names (customers do not write `refund_request`, injections
 *    do), and the `>` of quoted lines (a forwarded ask is often quoted).
 * 2. {@link focusTicket}: a ticket with two asks is split where it says which one is the main one: the
 *    text after a main marker ("most importantly", "main thing", "lo más importante", "das Wichtigste",
 *    "一番大事", "最重要的是", or "actual request:" after an injected instruction) up to the next minor
 *    marker; else a minor marker at the start of a sentence ("Also,", "By the way", "Además",
 *    "Außerdem", "ついでに", "另外") ends the primary part. The rest is the secondary part, which the
 *    router routes on its own and only records.
 *
 * The patterns use only what Python's `re` and JavaScript's RegExp (flags `giu`/`gimu`) read the same way.
 */

import { truncateCodePoints } from '../../../features/text/index.ts';

/** The name of this pre-step; `labels.json` records the one the model was trained with. */
export const FOCUS_VERSION = 'ticket-focus-v1';

const LABEL_NAMES = ['order_status', 'refund_request', 'invoice_copy', 'account_access', 'outage_report', 'expense_claim_status'];

/** The pattern sources, verbatim those of `models/ticket_focus.py` (the parity test compares them). */
export const FOCUS_PATTERNS: Readonly<Record<string, string>> = Object.freeze({
  comment: String.raw`<!--[\s\S]*?-->`,
  style: String.raw`<(style|script|head)(?:[ \t\n][^<>]*)?>[\s\S]*?</\1[ \t\n]*>`,
  chat_token: String.raw`<\|[^|<>\n]{0,40}\|>`,
  block_tag: String.raw`</?(?:br|p|div|tr|li|ul|ol|h[1-6]|table|tbody|blockquote|hr)(?:[ \t\n/][^<>]*)?>`,
  tag: String.raw`</?[A-Za-z][A-Za-z0-9:_-]*(?:[ \t\n/][^<>]*)?>`,
  entity: String.raw`&(nbsp|amp|lt|gt|quot|#39|apos);`,
  label: String.raw`(?<![A-Za-z0-9_])(?:` + LABEL_NAMES.join('|') + String.raw`)(?![A-Za-z0-9_])`,
  quote: String.raw`^[ \t]*(?:>[ \t]?)+`,
  spaces: String.raw`[ \t]+`,
  blank_lines: String.raw`\n[ \t]*(?:\n[ \t]*)+`,
  main:
    String.raw`(?:(?<![A-Za-zÀ-ÿ])(?:most important(?:ly)?|(?:the )?main (?:thing|issue|question|request|problem|point)|above all|first and foremost|top priority` +
    String.raw`|(?:actual|real) (?:request|question|problem|issue|ask)` +
    String.raw`|lo (?:más|mas) (?:importante|urgente)|lo principal|sobre todo|ante todo|lo que más me urge|(?:consulta|pregunta|problema) real` +
    String.raw`|das wichtigste|am wichtigsten|am dringendsten|hauptsache|hauptsächlich|hauptanliegen|vor allem|in erster linie|eigentliche[nrs]? (?:frage|anliegen|problem|meldung))(?![A-Za-zÀ-ÿ])` +
    String.raw`|一番大事|一番重要|最も重要|主な用件|メインの用件|本題|実際のお願い|本当の質問|最重要|最要紧|主要是|主要问题|重点是|正事|实际问题|实际需求|真实问题)[ \t]*(?:なのは|なのが|です|は|的是|是)?[ \t]*[:：,，、]?`,
  minor:
    String.raw`(?:^|(?<=[.!?。！？\n]))[ \t"'“「]*(?:(?:(?:and|y|und),? )?(?:also|and also|btw|by the way|p\.? ?s\.?|separately|unrelated|not urgent|less urgent|when you have a (?:moment|minute)|on another note|one more thing|another thing|oh and` +
    String.raw`|además|por cierto|aparte|también|otra cosa|por otro lado|de paso|cuando pod(?:áis|ais|áis)|y,? si pod(?:éis|eis)|menos urgente` +
    String.raw`|außerdem|ausserdem|übrigens|nebenbei|weniger dringend|davon abgesehen|zudem|noch etwas|und wenn möglich|wenn zeit ist)(?![A-Za-zÀ-ÿ])` +
    String.raw`|あと[、 ]|ついでに|それから|それと|また、|別件|急ぎではありませんが|なお、|另外|顺便|还有[，,]|不急的话|不太急|不急|此外)`,
});

const re = (name: string, flags = 'gimu') => new RegExp(FOCUS_PATTERNS[name]!, flags);
const RE_COMMENT = re('comment');
const RE_STYLE = re('style');
const RE_CHAT_TOKEN = re('chat_token');
const RE_BLOCK_TAG = re('block_tag');
const RE_TAG = re('tag');
const RE_ENTITY = re('entity');
const RE_LABEL = re('label');
const RE_QUOTE = re('quote');
const RE_SPACES = re('spaces');
const RE_BLANK_LINES = re('blank_lines');
const RE_MAIN = re('main', 'imu');
const RE_MINOR = re('minor', 'gimu');
const ENTITIES: Readonly<Record<string, string>> = { nbsp: ' ', amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'" };
/** The pre-step reads this many code points (twice what the featurizer keeps: room for markup). */
const MAX_CODE_POINTS = 8192;
/** A primary part shorter than this (code points) is no ask of its own: the whole text is routed. */
const MIN_PRIMARY = 4;

/** Trims spaces, tabs and line feeds only (the Python twin's `strip(" \t\n")`). */
function strip(s: string): string {
  return s.replace(/^[ \t\n]+|[ \t\n]+$/g, '');
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** The minor markers of `s` in order (a fresh iteration each time: RE_MINOR is shared and global). */
function* minorMarkers(s: string): Generator<RegExpExecArray> {
  const r = new RegExp(RE_MINOR);
  for (let m = r.exec(s); m; m = r.exec(s)) yield m;
}

/** Step 1: the ticket without markup, fake tags, label names and quote marks (see the module comment). */
export function cleanTicket(text: string): string {
  let t = truncateCodePoints(String(text ?? ''), MAX_CODE_POINTS)
    .replace(/\r\n/g, '\n')
    .replace(/[\r\u2028\u2029]/g, '\n');
  if (t.includes('<')) {
    t = t.replace(RE_COMMENT, ' ').replace(RE_STYLE, ' ').replace(RE_CHAT_TOKEN, ' ').replace(RE_BLOCK_TAG, '\n').replace(RE_TAG, ' ');
  }
  if (t.includes('&')) t = t.replace(RE_ENTITY, (_m, name: string) => ENTITIES[name.toLowerCase()]!);
  t = t.replace(RE_LABEL, ' ');
  if (t.includes('>')) t = t.replace(RE_QUOTE, '');
  t = t.replace(RE_SPACES, ' ').replace(RE_BLANK_LINES, '\n\n');
  return strip(t);
}

/** What {@link focusTicket} returns. */
export interface TicketFocus {
  /** The part to route (the cleaned whole text when no marker split the ticket). */
  primary: string;
  /** The rest, when a marker split the ticket; else null. */
  secondary: string | null;
}

/** Step 2: the primary and the secondary part of a ticket (see the module comment). */
export function focusTicket(text: string): TicketFocus {
  const t = cleanTicket(text);
  let primary = t;
  let secondary: string | null = null;
  const m = RE_MAIN.exec(t);
  if (m) {
    const rest = t.slice(m.index + m[0].length);
    const n = minorMarkers(rest).next().value;
    primary = strip(n ? rest.slice(0, n.index) : rest);
    secondary = strip(t.slice(0, m.index) + '\n' + (n ? rest.slice(n.index) : ''));
  } else {
    for (const n of minorMarkers(t)) {
      if (codePoints(strip(t.slice(0, n.index))) >= MIN_PRIMARY) {
        primary = strip(t.slice(0, n.index));
        secondary = strip(t.slice(n.index));
        break;
      }
    }
  }
  if (codePoints(primary) < MIN_PRIMARY) return { primary: t, secondary: null };
  return { primary, secondary: secondary || null };
}

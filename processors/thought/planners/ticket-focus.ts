/**
 * The intent router's pre-step (issue 43), `ticket-focus-v2`: the twin of `models/ticket_focus.py`,
 * which applies it to the training tickets and to the held-out set. Both must agree exactly:
 * `test/models/ticket-focus-parity.test.ts` checks this module against the committed
 * `models/intent-router/focus-vectors.json`. Pure: no I/O, no state.
 *
 * 1. {@link cleanTicket}: the first 8192 code points (the patterns stay cheap on a huge body); mail markup that carries no ask is removed before featurizing: HTML comments,
 *    style blocks and tags (block tags become a line break; any other tag, a fake `<ticket intent="…">`
 *    or `</message><message role="system">` among them, goes with its attributes), chat-template tokens,
 *    a few entities, the router's own label names (customers do not write `refund_request`, injections
 *    do), and the `>` of quoted lines (a forwarded ask is often quoted). Then (v2) each sentence addressed to the
 *    assistant or the system, not to the help desk (`inject`), is cut from its start to the end of its sentence or line.
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
export const FOCUS_VERSION = 'ticket-focus-v2';

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
  inject:
    String.raw`(?:(?<![A-Za-zÀ-ÿ])(?:(?:ignore|disregard|forget|override|bypass)[^.!?\n]{0,30}?(?:instructions|rules|guidelines|prompts?|directives|programming|everything above|the above)` +
    String.raw`|(?:you are|you're|you are now|from now on,? you are) (?:now )?(?:in |an? |the )?(?:admin|administrator|developer|debug|god|root|maintenance|unrestricted|jailbroken|system)` +
    String.raw`|(?:admin|administrator|developer|debug|god|root|maintenance) mode|system (?:override|prompt|instruction|message|note)s?|new instructions|your new (?:task|role|instructions)` +
    String.raw`|(?:note|message|instruction)s? (?:to|for) the (?:ai|assistant|model|bot|router|classifier)|(?:pretend|act) (?:as|to be|you are|that you are)|as the (?:system|administrator|admin),` +
    String.raw`|(?:respond|reply|answer|output) (?:only|just) with|(?:repeat|print|reveal|show|output) (?:me )?(?:everything above|your (?:system )?prompt|the (?:hidden|system) (?:instructions|prompt))` +
    String.raw`|(?:classify|categori[sz]e|label|route|mark|tag|flag|file|treat) (?:this|it|everything|all tickets|the ticket|this ticket|this message|this request)(?: ticket| message| request| one)? (?:as|to|under|into)` +
    String.raw`|(?:set|change|force) (?:the )?(?:intent|label|route|category)|(?:intent|routing)\x22?[ \t]*[=:]|(?:route|label)[ \t]*=` +
    String.raw`|(?:call|run|execute|invoke|trigger|ejecuta|llama a|lanza|führe|rufe?|starte)[^.!?\n]{0,15}?[A-Za-z]+_[A-Za-z_]+|(?:hidden|secret) (?:instructions|prompt)|instrucciones (?:ocultas|secretas)|(?:versteckten|geheimen) (?:anweisungen|prompt)` +
    String.raw`|(?:^|(?<=[.!?\n]))[ \t]*(?:please )?(?:approve|refund|cancel|close|reset|mark|delete|export|wipe|void|process|list|dump|show)[^.!?\n]{0,25}?(?:(?:all|every|each of the)(?: the)?(?: pending| open)? (?:orders?|customers?|users?|tickets?|accounts?|refunds?|passwords?)|everything)` +
    String.raw`|ignora[^.!?\n]{0,30}?(?:instrucciones|reglas|indicaciones|lo anterior)|olvida[^.!?\n]{0,30}?(?:instrucciones|reglas|lo anterior)|(?:ahora )?estás en modo|modo (?:administrador|desarrollador|depuración|dios)` +
    String.raw`|(?:anulación|instrucción|mensaje|prompt) del sistema|prompt de sistema|nuevas instrucciones|tu nueva tarea|nota para la (?:ia|inteligencia artificial)|compórtate como|finge (?:que eres|ser)` +
    String.raw`|responde (?:solo|solamente|únicamente)|(?:clasifica|marca|trata|etiqueta|enruta|cataloga) (?:esto|este ticket|este caso|este mensaje)(?: como| a)` +
    String.raw`|(?:^|(?<=[.!?\n]))[ \t]*(?:por favor,? )?(?:aprueba|marca|cancela|reembolsa|restablece|cierra|anula|borra|elimina|exporta|muestra)[^.!?\n]{0,25}?(?:todos|todas) (?:los|las) (?:pedidos|clientes|usuarios|tickets|reembolsos|cuentas|contraseñas)` +
    String.raw`|ignorier[^.!?\n]{0,30}?(?:anweisungen|regeln|vorgaben|instruktionen|das obige)|vergiss[^.!?\n]{0,30}?(?:anweisungen|regeln|vorgaben|das obige)|(?:du bist|sie sind) (?:jetzt|nun|ab sofort)` +
    String.raw`|(?:admin|administrator|entwickler|debug)-?modus|system-?(?:override|prompt|anweisung)|neue anweisungen|deine neue aufgabe|hinweis an die ki|verhalte dich wie|tu so,? als` +
    String.raw`|antworte (?:nur|ausschließlich|lediglich)|(?:stufe|markiere|klassifiziere|behandle|leite|kategorisiere) (?:das|dies|dieses ticket|es|alles)(?: als| an| ein)` +
    String.raw`|(?:^|(?<=[.!?\n]))[ \t]*(?:bitte )?(?:genehmige|setze|storniere|erstatte|schließe|lösche|exportiere|markiere|zeige)[^.!?\n]{0,25}?(?:alle|aller|sämtliche[nr]?) (?:bestellungen|kunden|nutzer|benutzer|tickets|erstattungen|konten|passwörter|offenen))(?![A-Za-zÀ-ÿ])` +
    String.raw`|(?:忽略|无视|忘掉|忘记)[^。！？\n]{0,12}?(?:指令|规则|设定|提示|要求)|你现在是|(?:管理员|开发者|调试|上帝)模式|系统(?:指令|提示|消息|覆盖)|新任务是|AI请注意|给AI的|只回复|扮演|假装你是` +
    String.raw`|(?:把|将)(?:这个|此|本|该)?(?:工单|请求|消息|问题)?(?:当作|归为|分到|标记为|标为|分类为|归类为)|(?:调用|执行|运行)[ ]?[A-Za-z]+_[A-Za-z_]+|(?:批准|取消|重置|关闭|导出|删除|标记)[^。！？\n]{0,4}?(?:所有|全部)|(?<![我们的咱])(?:所有|全部)的?(?:订单|用户|客户|工单|账号)[^。！？\n]{0,6}?(?:退款|标记为|取消|重置|关闭|导出|删除)|(?:隐藏|秘密)的?(?:指令|提示)` +
    String.raw`|(?:以前|これまで|上記|前|全て|すべて)の(?:指示|命令|ルール|設定)|(?:指示|命令|ルール)を(?:すべて|全て)?(?:無視|忘れ)|(?:管理者|開発者|デバッグ)モード|システム(?:指示|プロンプト|メッセージ)|あなたは今から|AIへ` +
    String.raw`|新しい(?:指示|タスク)|(?:隠された|秘密の)(?:指示|プロンプト)|とだけ(?:答え|返答|回答)|として振る舞|(?:これ|この(?:チケット|問い合わせ|件))を[^。！？\n]{0,15}?として(?:扱|分類|処理|振り分)|[A-Za-z]+_[A-Za-z_]+ ?を(?:実行|呼び出)` +
    String.raw`|(?:全て|すべて|全)の?(?:注文|ユーザー|顧客|チケット|アカウント)[^。！？\n]{0,12}?を[^。！？\n]{0,8}?(?:変更|承認|キャンセル|リセット|削除|表示|出力|エクスポート|返金|解決)|(?:すべて|全て|全部)(?:承認|削除|リセット))`,
  sentence_end: String.raw`[.!?。！？\n]`,
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
const RE_INJECT = re('inject', 'gimu');
const RE_SENTENCE_END = re('sentence_end', 'gmu');
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

/**
 * Cuts each instruction addressed to the assistant or the system (`inject`) from its start to the end of
 * its sentence (the punctuation goes with it) or line; what the customer wrote before it in the sentence stays.
 */
function dropInjections(t: string): string {
  const inject = new RegExp(RE_INJECT);
  const end = new RegExp(RE_SENTENCE_END);
  let out = '';
  let pos = 0;
  for (;;) {
    inject.lastIndex = pos;
    const m = inject.exec(t);
    if (!m) break;
    end.lastIndex = m.index + m[0].length;
    const e = end.exec(t);
    const stop = !e ? t.length : e[0] === '\n' ? e.index : e.index + e[0].length;
    out += t.slice(pos, m.index) + ' ';
    pos = Math.max(stop, m.index + 1);
  }
  return out + t.slice(pos);
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
  t = dropInjections(t);
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

/**
 * The ONNX intent model (`intent-router`, class {@link IntentRouter}): which flow does a customer ticket
 * in English, Chinese, Japanese, Spanish or German ask for, plus the slots (order id, invoice number, expense claim id,
 * e-mail, service, date) found in it. This is the model, not a planner: the `router` planner
 * (`router.ts`) and the skill planner (`skill.ts`) record its answer in `gather` and plan from it.
 *
 * The intent comes from a small logistic-regression model (`models/intent-router/model.onnx`, trained
 * by `models/train.py` on generated tickets, evaluated on a hand-written held-out set, see
 * `models/intent-router/eval-report.md`) over hashed character/word n-gram features
 * (`features/text/`), which mask id-like tokens (`<id>`): the intent comes from the wording,
 * never from the shape of an id. It never guesses: below the confidence threshold (default 0.4), or
 * when the model's best class is `unknown`, the intent is `unknown`.
 *
 * Before the model, the ticket-focus pre-step (`ticket-focus.ts`, issue 43) removes markup, fake ticket
 * or role tags and quote marks, and splits a ticket with two asks where it says which one is the main
 * one; the primary part is routed (the cleaned whole text when that part alone is `unknown`), the other
 * part is routed on its own and recorded as `secondary`: never acted on, for a person or the model loop.
 *
 * Slots are plain regular expressions over the NFKC-normalized text (full-width characters become
 * ASCII), independent of the intent. Same text → same output. Nothing is loaded at import time.
 */
import { packagePath } from '../../../runtime/paths.ts';
import { MAX_INPUT_CODE_POINTS, TextModel, TextModelUser, withLoadedModel } from '../../../features/text/index.ts';
import { FOCUS_VERSION, cleanTicket, focusTicket } from './ticket-focus.ts';

/** The intents the router knows; `unknown` means off-domain or not confident enough. */
export const INTENTS = ['order_status', 'refund_request', 'invoice_copy', 'account_access', 'outage_report', 'expense_claim_status', 'unknown'] as const;
/** One of {@link INTENTS}. */
export type Intent = (typeof INTENTS)[number];

/**
 * Default minimum probability of the best intent; below it the route is `unknown`. 0.4 from the
 * calibration table of `models/intent-router/eval-report.md`: on the held-out tickets raising it to 0.6
 * sends more in-domain tickets to `unknown` (its precision falls) without making the routed ones more
 * accurate.
 */
export const DEFAULT_INTENT_THRESHOLD = 0.4;

/** The committed model directory, `models/intent-router/`. */
export const DEFAULT_INTENT_MODEL_DIR = packagePath('models', 'intent-router');

/**
 * Services recognized in the `service` slot (canonical name ← aliases, English words matched as
 * whole words case-insensitively, Chinese aliases as substrings).
 */
export const SERVICES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  payments: ['payments', 'payment', '支付', '付款'],
  checkout: ['checkout', '结账', '结算', '收银台'],
  search: ['search', '搜索'],
  login: ['login', 'sign-in', 'signin', '登录', '登陆'],
  api: ['api', '接口'],
});

/**
 * Slot names filled by {@link extractSlots}. For ids and e-mails, when a text holds several distinct
 * values, the first is in the singular slot and all of them, comma-separated, in the plural one
 * (`order_ids`, `invoice_ids`, `claim_ids`, `emails`).
 */
export type SlotName = 'order_id' | 'invoice_id' | 'claim_id' | 'email' | 'service' | 'date';

/** What {@link IntentRouter.route} returns. */
export interface IntentRoute {
  /** The routed intent: `unknown` when off-domain or when confidence < threshold. */
  intent: Intent;
  /** The probability of the model's best intent (also when the route fell back to `unknown`). */
  confidence: number;
  /** Extracted, normalized slots (see {@link extractSlots}). */
  slots: Record<string, string>;
  /** `intent-router@<first 12 hex of sha256(model.onnx)>`. */
  model: string;
  /** The model's best intent before the threshold was applied. */
  candidate: Intent;
  /**
   * A second ask the ticket marks as minor (or puts beside the marked main one), when the model routes
   * that part on its own to another known intent at or above the threshold. Only recorded.
   */
  secondary?: { intent: Intent; confidence: number };
}

/** Options of {@link IntentRouter}. */
export interface IntentRouterOptions {
  /** Minimum probability for a non-`unknown` route, in [0, 1]; default {@link DEFAULT_INTENT_THRESHOLD}. */
  threshold?: number;
}

const RE_ORDER = /(?<![A-Za-z0-9])O-(\d{8})(?!\d)/gi;
const RE_INVOICE = /(?<![A-Za-z0-9])INV-(\d{4})-(\d{4})(?!\d)/gi;
const RE_CLAIM = /(?<![A-Za-z0-9])EC-(\d{6})(?!\d)/gi;
const RE_EMAIL = /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9])/g;
const RE_DATE_ISO = /(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)/g;
const RE_DATE_ZH = /(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]/g;

function isoDate(y: string, m: string, d: string): string | null {
  const year = Number(y);
  const month = Number(m);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1) return null;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return null;
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const SERVICE_PATTERNS: ReadonlyArray<{ service: string; re: RegExp }> = Object.entries(SERVICES).flatMap(([service, aliases]) =>
  aliases.map((alias) => ({
    service,
    re: [...alias].every((c) => c.charCodeAt(0) < 0x80)
      ? new RegExp(`(?<![A-Za-z0-9_])${escapeRegExp(alias)}(?![A-Za-z0-9_])`, 'i')
      : new RegExp(escapeRegExp(alias)),
  })),
);

/**
 * Extracts slots from a ticket text (NFKC-normalized first, so full-width `Ｏ－１２３４５６７８` counts):
 * - `order_id`: `O-` + 8 digits, upper-cased (`o-12345678` → `O-12345678`);
 * - `invoice_id`: `INV-YYYY-NNNN`, upper-cased;
 * - `claim_id`: `EC-` + 6 digits, upper-cased;
 * - `email`: lower-cased;
 * - `service`: the canonical name ({@link SERVICES}) of the alias that occurs first, where the generic
 *   `api` counts only when no other service is named ("payments API is down" → `payments`);
 * - `date`: the first valid calendar date written `2026-11-29` or `2026年11月29日` / `2026年11月29号`,
 *   as ISO `YYYY-MM-DD` (impossible dates such as 2026-02-30 are skipped).
 * Missing slots are absent. Longer digit runs (`O-123456789`) do not match.
 */
export function extractSlots(text: string): Record<string, string> {
  const t = String(text ?? '')
    .slice(0, MAX_INPUT_CODE_POINTS * 2)
    .normalize('NFKC');
  const slots: Record<string, string> = {};
  const many = (re: RegExp, key: string, plural: string, norm: (m: RegExpExecArray) => string) => {
    const values: string[] = [];
    for (const m of t.matchAll(re)) {
      const v = norm(m);
      if (!values.includes(v)) values.push(v);
    }
    if (values.length) slots[key] = values[0]!;
    if (values.length > 1) slots[plural] = values.join(',');
  };
  many(RE_ORDER, 'order_id', 'order_ids', (m) => `O-${m[1]}`);
  many(RE_INVOICE, 'invoice_id', 'invoice_ids', (m) => `INV-${m[1]}-${m[2]}`);
  many(RE_CLAIM, 'claim_id', 'claim_ids', (m) => `EC-${m[1]}`);
  many(RE_EMAIL, 'email', 'emails', (m) => m[0].toLowerCase());

  let best: { at: number; service: string } | null = null;
  for (const { service, re } of SERVICE_PATTERNS) {
    const m = re.exec(t);
    if (!m) continue;
    const better = best === null || (best.service === 'api') !== (service === 'api') ? best === null || best.service === 'api' : m.index < best.at;
    if (better) best = { at: m.index, service };
  }
  if (best) slots['service'] = best.service;

  const dates: Array<{ at: number; iso: string }> = [];
  for (const re of [RE_DATE_ISO, RE_DATE_ZH]) {
    for (const m of t.matchAll(re)) {
      const iso = isoDate(m[1]!, m[2]!, m[3]!);
      if (iso) dates.push({ at: m.index!, iso });
    }
  }
  dates.sort((a, b) => a.at - b.at);
  if (dates.length) slots['date'] = dates[0]!.iso;
  return slots;
}

/** Routes customer tickets to an {@link Intent} and extracts their slots. */
export class IntentRouter extends TextModelUser {
  /** The minimum probability for a non-`unknown` route. */
  readonly threshold: number;

  /** Wraps a loaded model; most callers use {@link IntentRouter.load}. */
  constructor(model: TextModel, options: IntentRouterOptions = {}) {
    super(model, INTENTS, 'intent-router');
    const preStep = model.manifest.pre_step ?? null;
    if (preStep !== FOCUS_VERSION)
      throw new Error(`${model.id}: trained with pre-step ${String(preStep)}, this router applies ${FOCUS_VERSION} (retrain with models/train.py)`);
    const threshold = options.threshold ?? DEFAULT_INTENT_THRESHOLD;
    if (!(threshold >= 0 && threshold <= 1)) throw new RangeError(`intent threshold must be in [0, 1], got ${threshold}`);
    this.threshold = threshold;
  }

  /** Loads the model from `dir` (default: the committed `models/intent-router/`). */
  static load(dir: string = DEFAULT_INTENT_MODEL_DIR, options: IntentRouterOptions = {}): Promise<IntentRouter> {
    return withLoadedModel(dir, (model) => new IntentRouter(model, options));
  }

  /** Routes one ticket text. */
  async route(text: string): Promise<IntentRoute> {
    const [r] = await this.routeBatch([text]);
    return r!;
  }

  /**
   * Routes several ticket texts; results are in input order. Per text: the pre-step's primary part, then
   * the cleaned whole text when the primary part alone routes to `unknown`, and the secondary part.
   */
  async routeBatch(texts: readonly string[]): Promise<IntentRoute[]> {
    const parts = texts.map((t) => focusTicket(String(t ?? '')));
    const inputs: string[] = [];
    const at = parts.map((p) => ({ primary: inputs.push(p.primary) - 1, secondary: p.secondary === null ? -1 : inputs.push(p.secondary) - 1 }));
    const rows = await this.model.predict(inputs);
    const routes: IntentRoute[] = [];
    for (const [i, p] of parts.entries()) {
      let r = rows[at[i]!.primary]!;
      if (r.label === 'unknown' || r.confidence < this.threshold) {
        const whole = cleanTicket(String(texts[i] ?? ''));
        if (whole !== p.primary) r = (await this.model.predict([whole]))[0]!;
      }
      const candidate = r.label as Intent;
      const intent: Intent = r.confidence >= this.threshold ? candidate : 'unknown';
      const route: IntentRoute = { intent, confidence: r.confidence, slots: extractSlots(texts[i]!), model: this.model.id, candidate };
      const s = at[i]!.secondary >= 0 ? rows[at[i]!.secondary]! : null;
      if (s && s.label !== 'unknown' && s.label !== intent && s.confidence >= this.threshold)
        route.secondary = { intent: s.label as Intent, confidence: s.confidence };
      routes.push(route);
    }
    return routes;
  }
}

/**
 * The `POST` routes of the demo tool APIs: body validation, the side effects
 * (a refund is created, an e-mail is sent) recorded in a {@link ToolLedger},
 * and the `Idempotency-Key` request header: a request repeating a key answered
 * with a 2xx gets that stored answer again and performs no second side effect.
 */
import { PARAM_PATTERNS, invoiceCopy, isRefundable, newPasswordReset, newRefund, orderById } from './data.ts';
import { type JsonResponse, type RouteId, type RouteMatch, checkedParam, invalid } from './routes.ts';

/** Largest accepted `amount_cents` of a refund. */
export const MAX_AMOUNT_CENTS = 100_000_000;
/** Longest accepted `Idempotency-Key`. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Stored idempotent responses kept before the oldest are forgotten. */
export const MAX_IDEMPOTENCY_KEYS = 100_000;

type FieldCheck = (v: unknown) => boolean;
const stringMatching =
  (re: RegExp): FieldCheck =>
  (v) =>
    typeof v === 'string' && re.test(v);

/** The body fields each POST route requires, in the order they are checked; no other field is allowed. */
const BODY_FIELDS: Partial<Record<RouteId, ReadonlyArray<[string, FieldCheck]>>> = {
  'refunds.create': [
    ['order_id', stringMatching(PARAM_PATTERNS.order_id)],
    ['amount_cents', (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v <= MAX_AMOUNT_CENTS],
  ],
  'billing.send_invoice_copy': [],
  'identity.password_reset': [['customer_id', stringMatching(PARAM_PATTERNS.customer_id)]],
};

/**
 * Validates a POST body: a JSON object holding exactly the route's fields.
 *
 * @returns the parsed body, or the 400 answer naming the offending field
 *   (`body` when it is not a JSON object).
 */
function checkedBody(route: RouteId, text: string): { value: Record<string, unknown> } | { error: JsonResponse } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { error: invalid('body') };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { error: invalid('body') };
  const body = parsed as Record<string, unknown>;
  const fields = BODY_FIELDS[route] ?? [];
  for (const key of Object.keys(body)) {
    if (!fields.some(([name]) => name === key)) return { error: invalid(key) };
  }
  for (const [name, ok] of fields) {
    if (!(name in body) || !ok(body[name])) return { error: invalid(name) };
  }
  return { value: body };
}

/** Whether a `Content-Type` header denotes JSON (`application/json`, parameters allowed). */
function isJsonContentType(contentType: string | null): boolean {
  if (contentType === null) return false;
  return (contentType.split(';')[0] ?? '').trim().toLowerCase() === 'application/json';
}

/** JSON with object keys sorted, so equal bodies compare equal whatever their key order. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

interface StoredResponse {
  /** Route, path and canonical body of the request that stored it. */
  fingerprint: string;
  response: JsonResponse;
}

/**
 * The side-effect state of the POST routes: refunds issued per order, how
 * many resources each entity got (for deterministic ids), and the responses
 * stored under `Idempotency-Key`s (at most {@link MAX_IDEMPOTENCY_KEYS}, the
 * oldest forgotten first).
 */
export class ToolLedger {
  readonly #stored = new Map<string, StoredResponse>();
  readonly #refunded = new Map<string, number>();
  readonly #sequences = new Map<string, number>();

  /** Number of responses currently stored under an idempotency key. */
  get storedKeys(): number {
    return this.#stored.size;
  }

  /** The next sequence number (0, 1, …) of `route` for `entity`. */
  nextSequence(route: RouteId, entity: string): number {
    const key = `${route}\u0000${entity}`;
    const n = this.#sequences.get(key) ?? 0;
    this.#sequences.set(key, n + 1);
    return n;
  }

  /** Cents refunded so far for an order. */
  refunded(orderId: string): number {
    return this.#refunded.get(orderId) ?? 0;
  }

  /** Adds a refund to an order's refunded total. */
  addRefund(orderId: string, cents: number): void {
    this.#refunded.set(orderId, this.refunded(orderId) + cents);
  }

  /** The response stored under a key, if any. */
  lookup(key: string): StoredResponse | undefined {
    return this.#stored.get(key);
  }

  /** Stores a response under a key. */
  store(key: string, fingerprint: string, response: JsonResponse): void {
    this.#stored.set(key, { fingerprint, response });
    if (this.#stored.size > MAX_IDEMPOTENCY_KEYS) {
      const oldest = this.#stored.keys().next().value;
      if (oldest !== undefined) this.#stored.delete(oldest);
    }
  }
}

/** What a POST request led to. */
export interface PostOutcome {
  response: JsonResponse;
  /** Answered from the response stored under its `Idempotency-Key`; nothing was done again. */
  replayed: boolean;
  /** Its `Idempotency-Key` was already used for a different request (answered 422). */
  conflict: boolean;
  /** A side effect was performed (a refund created, a copy sent, a reset issued). */
  effect: boolean;
  /** The parsed body, when it was a JSON object. */
  input: Record<string, unknown> | null;
}

/** A POST request as the server received it. */
export interface PostRequest {
  /** The body text, or `null` when it was larger than the server accepts. */
  body: string | null;
  contentType: string | null;
  /** The `Idempotency-Key` header, or `null` when absent. */
  idempotencyKey: string | null;
}

/** Visible ASCII only, 1..255 characters. */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Performs a validated POST request's side effect and returns its answer. */
function perform(m: RouteMatch, param: string, input: Record<string, unknown>, ledger: ToolLedger): { response: JsonResponse; effect: boolean } {
  switch (m.route) {
    case 'refunds.create': {
      const orderId = input['order_id'] as string;
      const amount = input['amount_cents'] as number;
      const order = orderById(orderId);
      if (!isRefundable(order)) {
        return { response: { status: 409, body: { error: 'not_refundable', message: `order ${orderId} has not shipped yet` } }, effect: false };
      }
      const refundable = order.total_cents - ledger.refunded(orderId);
      if (amount > refundable) {
        return { response: { status: 409, body: { error: 'amount_exceeds_refundable', refundable_cents: Math.max(0, refundable) } }, effect: false };
      }
      const refund = newRefund(orderId, amount, ledger.nextSequence(m.route, orderId));
      ledger.addRefund(orderId, amount);
      return { response: { status: 201, body: refund }, effect: true };
    }
    case 'billing.send_invoice_copy': {
      const copy = invoiceCopy(param);
      if (copy === null) return { response: { status: 404, body: { error: 'invoice_not_found' } }, effect: false };
      ledger.nextSequence(m.route, param);
      return { response: { status: 202, body: copy }, effect: true };
    }
    case 'identity.password_reset': {
      const customerId = input['customer_id'] as string;
      return { response: { status: 202, body: newPasswordReset(customerId, ledger.nextSequence(m.route, customerId)) }, effect: true };
    }
    default:
      return { response: { status: 405, body: { error: 'method_not_allowed' } }, effect: false };
  }
}

/**
 * Handles a POST to a matched POST route, in this order: 413 for a body over
 * the size limit; 400 `invalid_parameter` for a bad path parameter or
 * `Idempotency-Key` header (`field: "idempotency-key"`); 415 unless the body
 * is `application/json`; 400 `invalid_parameter` naming the first bad body
 * field (`body` for non-JSON or a non-object); then the idempotency check —
 * a key stored with the same request replays its response, with a different
 * request it is 422 `idempotency_key_reused`; otherwise the side effect is
 * performed. Only 2xx answers are stored under the key (4xx ones do nothing,
 * so repeating them is harmless).
 */
export function processPost(m: RouteMatch, req: PostRequest, ledger: ToolLedger): PostOutcome {
  const outcome = (response: JsonResponse, extra: Partial<PostOutcome> = {}): PostOutcome => ({
    response,
    replayed: false,
    conflict: false,
    effect: false,
    input: null,
    ...extra,
  });
  if (req.body === null) return outcome({ status: 413, body: { error: 'body_too_large' } });
  const param = checkedParam(m);
  if ('error' in param) return outcome(param.error);
  const key = req.idempotencyKey;
  if (key !== null && !IDEMPOTENCY_KEY_PATTERN.test(key)) return outcome(invalid('idempotency-key'));
  if (!isJsonContentType(req.contentType)) {
    return outcome({ status: 415, body: { error: 'unsupported_media_type', message: 'the body must be application/json' } });
  }
  const body = checkedBody(m.route, req.body);
  if ('error' in body) return outcome(body.error);
  const input = body.value;
  const fingerprint = `${m.route} ${m.rawParam} ${canonicalJson(input)}`;
  if (key !== null) {
    const stored = ledger.lookup(key);
    if (stored !== undefined) {
      if (stored.fingerprint === fingerprint) return outcome(stored.response, { replayed: true, input });
      return outcome(
        { status: 422, body: { error: 'idempotency_key_reused', message: 'this Idempotency-Key was used for a different request' } },
        { conflict: true, input },
      );
    }
  }
  const done = perform(m, param.value, input, ledger);
  if (key !== null && done.response.status >= 200 && done.response.status < 300) ledger.store(key, fingerprint, done.response);
  return outcome(done.response, { effect: done.effect, input });
}

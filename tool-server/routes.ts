/**
 * Route table of the demo tool APIs: path matching, parameter and body
 * validation, and the normal (fault-free) response of each route.
 *
 * `GET` routes are pure functions of their path parameter. `POST` routes have
 * side effects (a refund is created, an e-mail is sent) recorded in a
 * {@link ToolLedger}, and honour the `Idempotency-Key` request header: a
 * request repeating a key answered with a 2xx gets that stored answer again
 * and performs no second side effect.
 *
 * @module
 */
import {
  customerTier,
  expenseClaim,
  findCustomerByEmail,
  invoiceById,
  invoiceCopy,
  isRefundable,
  isValidParam,
  latestIncident,
  latestOrder,
  newPasswordReset,
  newRefund,
  orderById,
  orderTracking,
  PARAM_PATTERNS,
  serviceStatus,
  type ParamField,
  type ServiceName,
} from './data.ts';

/** Ids of the tool routes, as used in fault specs and stats (the same names as the catalog's tools). */
export const ROUTE_IDS = [
  'crm.find_customer',
  'crm.tier',
  'orders.latest',
  'shipping.track',
  'orders.get',
  'refunds.create',
  'billing.get_invoice',
  'billing.send_invoice_copy',
  'identity.password_reset',
  'status.service',
  'incidents.latest',
  'expenses.get_claim',
] as const;

/** Id of a tool route. */
export type RouteId = (typeof ROUTE_IDS)[number];

/** The method a route answers. */
export type RouteMethod = 'GET' | 'POST';

interface RouteDef {
  id: RouteId;
  method: RouteMethod;
  /** Path segments after the leading `/`; `{name}` is the (single) path parameter. */
  segments: readonly string[];
}

/**
 * Every tool route. Matching tries them in order; the first whose segments
 * fit wins (so `/crm/customers/by-email/tier` is an e-mail lookup).
 */
const ROUTES: readonly RouteDef[] = [
  { id: 'crm.find_customer', method: 'GET', segments: ['crm', 'customers', 'by-email', '{email}'] },
  { id: 'crm.tier', method: 'GET', segments: ['crm', 'customers', '{customer_id}', 'tier'] },
  { id: 'orders.latest', method: 'GET', segments: ['orders', 'customers', '{customer_id}', 'latest'] },
  { id: 'shipping.track', method: 'GET', segments: ['shipping', 'orders', '{order_id}', 'tracking'] },
  { id: 'orders.get', method: 'GET', segments: ['orders', '{order_id}'] },
  { id: 'refunds.create', method: 'POST', segments: ['refunds'] },
  { id: 'billing.get_invoice', method: 'GET', segments: ['billing', 'invoices', '{invoice_id}'] },
  { id: 'billing.send_invoice_copy', method: 'POST', segments: ['billing', 'invoices', '{invoice_id}', 'copies'] },
  { id: 'identity.password_reset', method: 'POST', segments: ['identity', 'password-resets'] },
  { id: 'status.service', method: 'GET', segments: ['status', 'services', '{service}'] },
  { id: 'incidents.latest', method: 'GET', segments: ['incidents', 'services', '{service}', 'latest'] },
  { id: 'expenses.get_claim', method: 'GET', segments: ['expenses', 'claims', '{claim_id}'] },
];

/** The method of each route. */
export const ROUTE_METHODS: Readonly<Record<RouteId, RouteMethod>> = Object.freeze(
  Object.fromEntries(ROUTES.map((r) => [r.id, r.method])) as Record<RouteId, RouteMethod>,
);

/** Ids of the `POST` routes (the ones with side effects and `Idempotency-Key` support). */
export const POST_ROUTE_IDS: readonly RouteId[] = ROUTES.filter((r) => r.method === 'POST').map((r) => r.id);

/** A request path matched to a tool route. */
export interface RouteMatch {
  route: RouteId;
  /** The method the route answers. */
  method: RouteMethod;
  /** The path parameter's name, as reported in `invalid_parameter` errors; `null` when the route has none. */
  field: ParamField | null;
  /** The parameter's path segment as received (still percent-encoded); `''` when the route has none. */
  rawParam: string;
  /** The percent-decoded parameter (`''` when the route has none), or `null` when it is not valid percent-encoding. */
  param: string | null;
}

/** A status code and JSON body. */
export interface JsonResponse {
  status: number;
  body: unknown;
}

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * Matches a URL path (without query string, still percent-encoded) to a tool
 * route. Matching is exact: no trailing slash, no extra segments.
 *
 * @returns the match, or `null` when the path is not a tool route.
 */
export function matchRoute(path: string): RouteMatch | null {
  const seg = path.split('/');
  if (seg.length < 2 || seg[0] !== '') return null;
  const parts = seg.slice(1);
  for (const def of ROUTES) {
    if (def.segments.length !== parts.length) continue;
    let field: ParamField | null = null;
    let rawParam = '';
    let fits = true;
    for (let i = 0; i < parts.length && fits; i++) {
      const want = def.segments[i] as string;
      const got = parts[i] as string;
      if (want.startsWith('{')) {
        field = want.slice(1, -1) as ParamField;
        rawParam = got;
      } else if (want !== got) {
        fits = false;
      }
    }
    if (!fits) continue;
    return { route: def.id, method: def.method, field, rawParam, param: field === null ? '' : decodeSegment(rawParam) };
  }
  return null;
}

function invalid(field: string): JsonResponse {
  return { status: 400, body: { error: 'invalid_parameter', field } };
}

/** The path parameter when it passes its strict pattern, else the 400 answer. */
function checkedParam(m: RouteMatch): { value: string } | { error: JsonResponse } {
  if (m.field === null) return { value: '' };
  const p = m.param;
  if (p === null || !isValidParam(m.field, p)) return { error: invalid(m.field) };
  return { value: p };
}

/**
 * The fault-free response of a matched `GET` route: 400 `invalid_parameter`
 * for a parameter failing its strict pattern, 404 for an unknown customer
 * email or invoice, otherwise 200 with deterministic data. A `POST` route has
 * no response without a body (see {@link processPost}); it answers 405 here.
 */
export function normalResponse(m: RouteMatch): JsonResponse {
  if (m.method !== 'GET') return { status: 405, body: { error: 'method_not_allowed' } };
  const checked = checkedParam(m);
  if ('error' in checked) return checked.error;
  const p = checked.value;
  switch (m.route) {
    case 'crm.find_customer': {
      const customer = findCustomerByEmail(p);
      return customer === null
        ? { status: 404, body: { error: 'customer_not_found' } }
        : { status: 200, body: customer };
    }
    case 'crm.tier':
      return { status: 200, body: customerTier(p) };
    case 'orders.latest':
      return { status: 200, body: latestOrder(p) };
    case 'shipping.track':
      return { status: 200, body: orderTracking(p) };
    case 'orders.get':
      return { status: 200, body: orderById(p) };
    case 'billing.get_invoice': {
      const invoice = invoiceById(p);
      return invoice === null ? { status: 404, body: { error: 'invoice_not_found' } } : { status: 200, body: invoice };
    }
    case 'status.service':
      return { status: 200, body: serviceStatus(p as ServiceName) };
    case 'incidents.latest':
      return { status: 200, body: latestIncident(p as ServiceName) };
    case 'expenses.get_claim':
      return { status: 200, body: expenseClaim(p) };
    default:
      return { status: 405, body: { error: 'method_not_allowed' } };
  }
}

// ---------------------------------------------------------------------------
// POST routes
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// wrong_schema bodies
// ---------------------------------------------------------------------------

/** A number derived from the parameter's digits (or its length), for wrong-typed ids. */
function numericId(param: string): number {
  const d = param.replace(/\D/g, '');
  return d.length > 0 ? Number(d.slice(0, 9)) : param.length;
}

/**
 * A syntactically valid JSON body that violates the route's schema: a required
 * field is missing and others have the wrong type or an out-of-enum value.
 *
 * @param m - the matched route.
 * @param input - for POST routes, the request body if it parsed as an object.
 */
export function wrongSchemaBody(m: RouteMatch, input: Record<string, unknown> | null = null): unknown {
  const p = m.param ?? m.rawParam;
  const str = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback);
  switch (m.route) {
    case 'crm.find_customer':
      // customer_id missing; id is a number; name is a number.
      return { id: numericId(p), email: p, name: 42 };
    case 'crm.tier':
      // customer_id is a number; tier is a number instead of an enum string.
      return { customer_id: numericId(p), tier: 3 };
    case 'orders.latest':
      // placed_at missing; order_id is a number; status out of enum; total_cents a string.
      return { order_id: numericId(p), customer_id: p, status: 'lost', total_cents: '12.50' };
    case 'shipping.track':
      // state missing; carrier null; eta not a date-time.
      return { order_id: p, carrier: null, eta: 'tomorrow' };
    case 'orders.get':
      // customer_id and placed_at missing; order_id a number; status out of enum; total_cents a string.
      return { order_id: numericId(p), status: 'lost', total_cents: '12.50' };
    case 'refunds.create': {
      // state missing; refund_id a number; amount_cents a string.
      const orderId = str(input?.['order_id'], 'O-00000000');
      return { refund_id: numericId(orderId), order_id: orderId, amount_cents: String(input?.['amount_cents'] ?? '12.50') };
    }
    case 'billing.get_invoice':
      // issued_at missing; invoice_id a number; amount_cents a string.
      return { invoice_id: numericId(p), customer_id: 'C-000000', amount_cents: '12.50' };
    case 'billing.send_invoice_copy':
      // channel missing; sent a string.
      return { invoice_id: p, sent: 'yes' };
    case 'identity.password_reset':
      // expires_at missing; customer_id a number; reset_id null.
      return { customer_id: numericId(str(input?.['customer_id'], '')), reset_id: null };
    case 'status.service':
      // checked_at missing; state a number.
      return { service: p, state: 2 };
    case 'incidents.latest':
      // incident_id missing; id a number; title null; state out of enum.
      return { id: numericId(p), service: p, title: null, state: 'fixed' };
    case 'expenses.get_claim':
      // updated_at missing; claim_id a number; state null; amount_cents a string.
      return { claim_id: numericId(p), state: null, amount_cents: '12.50' };
  }
}

/**
 * Route table of the demo tool APIs: path matching, parameter validation, and
 * the normal (fault-free) response of each `GET` route.
 *
 * `GET` routes are pure functions of their path parameter. `POST` routes have
 * side effects (a refund is created, an e-mail is sent) and are answered by
 * `post-routes.ts`; the `wrong_schema` fault's bodies are in `wrong-schema.ts`.
 *
 * @module
 */
import {
  type ParamField,
  type ServiceName,
  customerTier,
  expenseClaim,
  findCustomerByEmail,
  invoiceById,
  isValidParam,
  latestIncident,
  latestOrder,
  orderById,
  orderTracking,
  serviceStatus,
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

export function invalid(field: string): JsonResponse {
  return { status: 400, body: { error: 'invalid_parameter', field } };
}

/** The path parameter when it passes its strict pattern, else the 400 answer. */
export function checkedParam(m: RouteMatch): { value: string } | { error: JsonResponse } {
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
      return customer === null ? { status: 404, body: { error: 'customer_not_found' } } : { status: 200, body: customer };
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

/**
 * Route table of the demo tool APIs: path matching, parameter validation and
 * the normal (fault-free) response of each route.
 *
 * @module
 */
import {
  customerTier,
  findCustomerByEmail,
  isValidParam,
  latestOrder,
  orderTracking,
  type ParamField,
} from './data.ts';

/** Ids of the tool routes, as used in fault specs and stats. */
export const ROUTE_IDS = ['crm.find_customer', 'crm.tier', 'orders.latest', 'shipping.track'] as const;

/** Id of a tool route. */
export type RouteId = (typeof ROUTE_IDS)[number];

/** A request path matched to a tool route. */
export interface RouteMatch {
  route: RouteId;
  /** The path parameter's name, as reported in `invalid_parameter` errors. */
  field: ParamField;
  /** The parameter's path segment as received (still percent-encoded). */
  rawParam: string;
  /** The percent-decoded parameter, or `null` when it is not valid percent-encoding. */
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
  if (seg.length !== 5 || seg[0] !== '') return null;
  const [, a, b, c, d] = seg as [string, string, string, string, string];
  let route: RouteId;
  let field: ParamField;
  let rawParam: string;
  if (a === 'crm' && b === 'customers' && c === 'by-email') {
    [route, field, rawParam] = ['crm.find_customer', 'email', d];
  } else if (a === 'crm' && b === 'customers' && d === 'tier') {
    [route, field, rawParam] = ['crm.tier', 'customer_id', c];
  } else if (a === 'orders' && b === 'customers' && d === 'latest') {
    [route, field, rawParam] = ['orders.latest', 'customer_id', c];
  } else if (a === 'shipping' && b === 'orders' && d === 'tracking') {
    [route, field, rawParam] = ['shipping.track', 'order_id', c];
  } else {
    return null;
  }
  return { route, field, rawParam, param: decodeSegment(rawParam) };
}

/**
 * The fault-free response of a matched route: 400 `invalid_parameter` for a
 * parameter failing its strict pattern, 404 `customer_not_found` for an
 * unknown customer email, otherwise 200 with deterministic data.
 */
export function normalResponse(m: RouteMatch): JsonResponse {
  const p = m.param;
  if (p === null || !isValidParam(m.field, p)) {
    return { status: 400, body: { error: 'invalid_parameter', field: m.field } };
  }
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
  }
}

/** A number derived from the parameter's digits (or its length), for wrong-typed ids. */
function numericId(param: string): number {
  const d = param.replace(/\D/g, '');
  return d.length > 0 ? Number(d.slice(0, 9)) : param.length;
}

/**
 * A syntactically valid JSON body that violates the route's schema: a required
 * field is missing and others have the wrong type or an out-of-enum value.
 */
export function wrongSchemaBody(m: RouteMatch): unknown {
  const p = m.param ?? m.rawParam;
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
  }
}

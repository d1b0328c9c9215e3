/**
 * The bodies of the `wrong_schema` fault: valid JSON that violates each route's
 * schema (a required field missing, others of the wrong type or out of their
 * enum), derived from the request, so the same request gets the same body.
 */
import type { RouteMatch } from './routes.ts';

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

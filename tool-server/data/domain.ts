/**
 * The wider demo domain: orders by id, refunds, billing, identity, service status and incidents,
 * expense claims (see docs/DEMO-DOMAIN.md). Same derivation as the rest of the data.
 */
import { ORDER_EPOCH_MS, ORDER_WINDOW_SECONDS, type Order, orderFacts } from './customers.ts';
import { HOUR_MS, PLUS_EIGHT_MS, digest, digits, formatPlusEight, formatUtc, pick } from './derive.ts';

/**
 * The demo's fixed "now", 2026-01-01T00:00:00+08:00 (the end of the window
 * orders are placed in). Times that would naturally be relative to the
 * present (a status check, a reset link's expiry) are relative to this, so
 * answers never depend on the real clock.
 */
export const DEMO_NOW_MS = Date.UTC(2026, 0, 1) - PLUS_EIGHT_MS;

/** The services `status.service` and `incidents.latest` know. */
export const SERVICES = ['payments', 'checkout', 'search', 'login', 'api'] as const;

/** A monitored service. */
export type ServiceName = (typeof SERVICES)[number];

/** Health of a service. */
export type ServiceState = 'operational' | 'degraded' | 'outage';

/**
 * The (fixed) state of each service. A table rather than a hash so the demo
 * shows every branch: `payments` is down, `search` is degraded, the rest are
 * operational.
 */
export const SERVICE_STATES: Readonly<Record<ServiceName, ServiceState>> = Object.freeze({
  payments: 'outage',
  checkout: 'operational',
  search: 'degraded',
  login: 'operational',
  api: 'operational',
});

/** Body of `GET /status/services/{service}`. */
export interface ServiceStatus {
  service: ServiceName;
  state: ServiceState;
  /** RFC 3339 date-time in UTC (`Z`), 0–299 s before {@link DEMO_NOW_MS}. */
  checked_at: string;
}

/** State of an incident. */
export type IncidentState = 'investigating' | 'monitoring' | 'resolved';

/** Body of `GET /incidents/services/{service}/latest`. */
export interface Incident {
  incident_id: string;
  service: ServiceName;
  title: string;
  state: IncidentState;
}

/** State of a refund when it is created. */
export type RefundState = 'pending';

/** Body of `POST /refunds` (201). */
export interface Refund {
  refund_id: string;
  order_id: string;
  amount_cents: number;
  state: RefundState;
}

/** Body of `GET /billing/invoices/{invoice_id}`. */
export interface Invoice {
  invoice_id: string;
  customer_id: string;
  amount_cents: number;
  /** RFC 3339 date-time with a `+08:00` offset, within the year the invoice number names. */
  issued_at: string;
}

/** Body of `POST /billing/invoices/{invoice_id}/copies` (202). */
export interface InvoiceCopy {
  invoice_id: string;
  sent: true;
  channel: 'email';
}

/** Body of `POST /identity/password-resets` (202). */
export interface PasswordReset {
  customer_id: string;
  reset_id: string;
  /** RFC 3339 date-time with a `+08:00` offset, one hour after {@link DEMO_NOW_MS}. */
  expires_at: string;
}

/** State of an expense claim. */
export type ClaimState = 'submitted' | 'approved' | 'paid' | 'rejected';

/** Body of `GET /expenses/claims/{claim_id}`. */
export interface ExpenseClaim {
  claim_id: string;
  state: ClaimState;
  amount_cents: number;
  /** RFC 3339 date-time with a `+08:00` offset. */
  updated_at: string;
}

const INCIDENT_STATE_FOR: Record<ServiceState, IncidentState> = {
  outage: 'investigating',
  degraded: 'monitoring',
  operational: 'resolved',
};
const INCIDENT_TITLES: Record<ServiceName, readonly [string, ...string[]]> = {
  payments: ['Card payments failing at the payment gateway', 'Elevated payment authorization errors', 'Delayed payment confirmations'],
  checkout: ['Checkout page slow to load', 'Errors applying discount codes at checkout', 'Intermittent checkout timeouts'],
  search: ['Search results slow or incomplete', 'Search index lagging behind catalog updates', 'Elevated search error rate'],
  login: ['Some users unable to sign in', 'Delayed one-time passcode e-mails', 'Elevated login latency'],
  api: ['Elevated API error rate', 'API latency above normal', 'Webhook deliveries delayed'],
};
const CLAIM_STATES = ['submitted', 'approved', 'paid', 'rejected'] as const;

/**
 * An order by its id. Status, total and placement time are the ones
 * {@link latestOrder} and {@link orderTracking} report for the same order id.
 * The customer id cannot be recovered from the order id (`orders.latest`
 * derives the order id from the customer by a hash), so it is derived from the
 * order id here: for an order id `orders.latest` returned, this customer id
 * generally differs from that customer's.
 *
 * @param orderId - a valid order id (`O-dddddddd`).
 */
export function orderById(orderId: string): Order {
  const facts = orderFacts(orderId);
  return {
    order_id: orderId,
    customer_id: `C-${digits(digest('orders.customer', orderId), 6)}`,
    status: facts.status,
    total_cents: facts.total_cents,
    placed_at: formatPlusEight(facts.placedAtMs),
  };
}

/**
 * Whether an order can be refunded at all: only once it has shipped (a placed
 * order is cancelled, not refunded).
 */
export function isRefundable(order: Order): boolean {
  return order.status !== 'placed';
}

/**
 * A new refund. `sequence` is how many refunds this order already had, so
 * repeated (non-idempotent) refunds of one order get distinct ids while a
 * fresh server replays the same ids for the same request history.
 *
 * @param orderId - a valid order id.
 * @param amountCents - the refunded amount.
 * @param sequence - 0 for the order's first refund, 1 for the second, …
 */
export function newRefund(orderId: string, amountCents: number, sequence: number): Refund {
  const h = digest('refunds.create', `${orderId}:${amountCents}:${sequence}`);
  return { refund_id: `R-${digits(h, 8)}`, order_id: orderId, amount_cents: amountCents, state: 'pending' };
}

/** Whether the invoice does not exist: its number ends in `9999`. */
export function isUnknownInvoice(invoiceId: string): boolean {
  return invoiceId.endsWith('9999');
}

/** The instant `offsetSeconds` after the start of `year` in UTC+08:00 (any year 0..9999). */
function inYearPlusEight(year: number, offsetSeconds: number): number {
  const start = new Date(0);
  start.setUTCFullYear(year, 0, 1);
  const next = new Date(0);
  next.setUTCFullYear(year + 1, 0, 1);
  const span = (next.getTime() - start.getTime()) / 1000;
  return start.getTime() - PLUS_EIGHT_MS + (offsetSeconds % span) * 1000;
}

/**
 * An invoice by its number (`INV-yyyy-nnnn`); it was issued in year `yyyy`.
 *
 * @param invoiceId - a valid invoice number.
 * @returns the invoice, or `null` when {@link isUnknownInvoice} holds.
 */
export function invoiceById(invoiceId: string): Invoice | null {
  if (isUnknownInvoice(invoiceId)) return null;
  const h = digest('billing.invoice', invoiceId);
  const year = Number(invoiceId.slice(4, 8));
  return {
    invoice_id: invoiceId,
    customer_id: `C-${digits(h, 6)}`,
    amount_cents: 500 + (h.readUInt32BE(6) % 300_000),
    issued_at: formatPlusEight(inYearPlusEight(year, h.readUInt32BE(10))),
  };
}

/**
 * The answer to sending a copy of an invoice by e-mail.
 *
 * @returns the receipt, or `null` when the invoice does not exist.
 */
export function invoiceCopy(invoiceId: string): InvoiceCopy | null {
  if (isUnknownInvoice(invoiceId)) return null;
  return { invoice_id: invoiceId, sent: true, channel: 'email' };
}

/**
 * A new password reset for a customer; `sequence` counts the customer's
 * earlier resets (see {@link newRefund}).
 */
export function newPasswordReset(customerId: string, sequence: number): PasswordReset {
  const h = digest('identity.password_reset', `${customerId}:${sequence}`);
  return { customer_id: customerId, reset_id: `PWR-${digits(h, 8)}`, expires_at: formatPlusEight(DEMO_NOW_MS + HOUR_MS) };
}

/**
 * The current state of a service (see {@link SERVICE_STATES}).
 *
 * @param service - a valid service name.
 */
export function serviceStatus(service: ServiceName): ServiceStatus {
  const h = digest('status.service', service);
  return { service, state: SERVICE_STATES[service], checked_at: formatUtc(DEMO_NOW_MS - (h.readUInt16BE(0) % 300) * 1000) };
}

/**
 * The latest incident of a service: still being investigated during an
 * outage, monitored while degraded, resolved when operational.
 *
 * @param service - a valid service name.
 */
export function latestIncident(service: ServiceName): Incident {
  const h = digest('incidents.latest', service);
  return {
    incident_id: `INC-${digits(h, 6)}`,
    service,
    title: pick(INCIDENT_TITLES[service], h[6] ?? 0),
    state: INCIDENT_STATE_FOR[SERVICE_STATES[service]],
  };
}

/**
 * An expense claim by its id.
 *
 * @param claimId - a valid claim id (`EC-dddddd`).
 */
export function expenseClaim(claimId: string): ExpenseClaim {
  const h = digest('expenses.claim', claimId);
  return {
    claim_id: claimId,
    state: pick(CLAIM_STATES, h[0] ?? 0),
    amount_cents: 100 + (h.readUInt32BE(1) % 200_000),
    updated_at: formatPlusEight(ORDER_EPOCH_MS + (h.readUInt32BE(5) % ORDER_WINDOW_SECONDS) * 1000),
  };
}

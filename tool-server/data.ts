/**
 * Deterministic fake data for the demo tool APIs.
 *
 * Every value is derived from a SHA-256 hash of the inputs (namespaced per
 * field), so the same input always yields byte-identical output and different
 * inputs yield independent values. Nothing here reads the clock, the
 * environment or `Math.random`.
 *
 * @module
 */
import { createHash } from 'node:crypto';

/** Strict patterns that path parameters must match (after percent-decoding). */
export const PARAM_PATTERNS = {
  /** A plain `local@domain.tld` address; total length is checked separately (max 254). */
  email: /^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,63}$/,
  /** `C-` followed by exactly 6 digits. */
  customer_id: /^C-\d{6}$/,
  /** `O-` followed by exactly 8 digits. */
  order_id: /^O-\d{8}$/,
  /** `INV-`, a 4-digit year, `-`, a 4-digit number. */
  invoice_id: /^INV-\d{4}-\d{4}$/,
  /** One of the monitored services (lower case, see {@link SERVICES}). */
  service: /^(?:payments|checkout|search|login|api)$/,
  /** `EC-` followed by exactly 6 digits. */
  claim_id: /^EC-\d{6}$/,
} as const;

/** Name of a path parameter that the tool routes accept. */
export type ParamField = keyof typeof PARAM_PATTERNS;

/** Maximum length of an email address (RFC 5321 path limit). */
const MAX_EMAIL_LENGTH = 254;

/**
 * Checks a decoded path parameter against its strict pattern.
 *
 * @param field - which parameter the value is for.
 * @param value - the percent-decoded value.
 * @returns `true` when the value is acceptable.
 */
export function isValidParam(field: ParamField, value: string): boolean {
  if (field === 'email' && value.length > MAX_EMAIL_LENGTH) return false;
  return PARAM_PATTERNS[field].test(value);
}

/** A CRM customer record, as returned by `GET /crm/customers/by-email/{email}`. */
export interface Customer {
  customer_id: string;
  email: string;
  name: string;
}

/** Loyalty tier of a customer. */
export type CustomerTier = 'gold' | 'silver' | 'bronze';

/** Body of `GET /crm/customers/{customer_id}/tier`. */
export interface CustomerTierRecord {
  customer_id: string;
  tier: CustomerTier;
}

/** Lifecycle state of an order. */
export type OrderStatus = 'placed' | 'shipped' | 'delivered';

/** Body of `GET /orders/customers/{customer_id}/latest`. */
export interface Order {
  order_id: string;
  customer_id: string;
  status: OrderStatus;
  total_cents: number;
  /** RFC 3339 date-time with a `+08:00` offset, e.g. `2025-03-14T09:26:53+08:00`. */
  placed_at: string;
}

/** Parcel carrier. */
export type Carrier = 'DHL' | 'UPS' | 'SF';

/** Shipment state. */
export type TrackingState = 'pending' | 'in_transit' | 'delivered';

/** Body of `GET /shipping/orders/{order_id}/tracking`. */
export interface Tracking {
  order_id: string;
  carrier: Carrier;
  state: TrackingState;
  /** RFC 3339 date-time in UTC (`Z`), e.g. `2025-03-17T04:00:00Z`. */
  eta: string;
}

const FIRST_NAMES = ['Alice', 'Bao', 'Chen', 'Dana', 'Emeka', 'Farah', 'Goran', 'Hana', 'Ivan', 'Jia', 'Kofi', 'Lena', 'Mei', 'Nikhil', 'Olga', 'Priya'] as const;
const LAST_NAMES = ['Anders', 'Brown', 'Castillo', 'Dubois', 'Eriksen', 'Fujita', 'Garcia', 'Huang', 'Ito', 'Jensen', 'Kim', 'Lim', 'Mendes', 'Novak', 'Okafor', 'Tan'] as const;
const TIERS = ['gold', 'silver', 'bronze'] as const;
const ORDER_STATUSES = ['placed', 'shipped', 'delivered'] as const;
const CARRIERS = ['DHL', 'UPS', 'SF'] as const;
const STATE_FOR_STATUS: Record<OrderStatus, TrackingState> = {
  placed: 'pending',
  shipped: 'in_transit',
  delivered: 'delivered',
};

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const PLUS_EIGHT_MS = 8 * HOUR_MS;
/** 2025-01-01T00:00:00+08:00 — the earliest `placed_at` that can be generated. */
const ORDER_EPOCH_MS = Date.UTC(2025, 0, 1) - PLUS_EIGHT_MS;
const ORDER_WINDOW_SECONDS = 365 * 24 * 3600;

/** SHA-256 of `namespace:value`; namespacing keeps each derived field independent. */
function digest(namespace: string, value: string): Buffer {
  return createHash('sha256').update(`${namespace}:${value}`, 'utf8').digest();
}

/** Picks an element of a non-empty list using one byte of a hash. */
function pick<T>(list: readonly [T, ...T[]], byte: number): T {
  return list[byte % list.length] ?? list[0];
}

/** `n` decimal digits (zero padded) derived from the first 6 bytes of a hash. */
function digits(hash: Buffer, n: number): string {
  return String(hash.readUIntBE(0, 6) % 10 ** n).padStart(n, '0');
}

/** Formats an instant as RFC 3339 in UTC+08:00 with whole seconds. */
function formatPlusEight(ms: number): string {
  return `${new Date(ms + PLUS_EIGHT_MS).toISOString().slice(0, 19)}+08:00`;
}

/** Formats an instant as RFC 3339 in UTC (`Z`) with whole seconds. */
function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/**
 * Whether the email denotes a customer that does not exist: its local part
 * starts with `unknown` (case-insensitive).
 *
 * @param email - a valid email address.
 */
export function isUnknownCustomerEmail(email: string): boolean {
  return email.toLowerCase().startsWith('unknown');
}

/**
 * Looks a customer up by email address.
 *
 * The customer id and name are derived from the lower-cased address, so
 * `Alice@Example.com` and `alice@example.com` are the same customer; the
 * `email` field echoes the address as given.
 *
 * @param email - a valid email address (see {@link PARAM_PATTERNS}).
 * @returns the customer, or `null` when {@link isUnknownCustomerEmail} holds.
 */
export function findCustomerByEmail(email: string): Customer | null {
  if (isUnknownCustomerEmail(email)) return null;
  const h = digest('crm.customer', email.toLowerCase());
  return {
    customer_id: `C-${digits(h, 6)}`,
    email,
    name: `${pick(FIRST_NAMES, h[6] ?? 0)} ${pick(LAST_NAMES, h[7] ?? 0)}`,
  };
}

/**
 * The loyalty tier of a customer.
 *
 * @param customerId - a valid customer id (`C-dddddd`).
 */
export function customerTier(customerId: string): CustomerTierRecord {
  const h = digest('crm.tier', customerId);
  return { customer_id: customerId, tier: pick(TIERS, h[0] ?? 0) };
}

/** Order facts derived from the order id alone, shared by orders and shipping. */
function orderFacts(orderId: string): { status: OrderStatus; total_cents: number; placedAtMs: number } {
  const h = digest('orders.order', orderId);
  return {
    status: pick(ORDER_STATUSES, h[0] ?? 0),
    total_cents: h.readUInt32BE(1) % 500_000,
    placedAtMs: ORDER_EPOCH_MS + (h.readUInt32BE(5) % ORDER_WINDOW_SECONDS) * 1000,
  };
}

/**
 * The latest order of a customer. The order id is derived from the customer
 * id; every other field is derived from the order id, so it agrees with
 * {@link orderTracking} for the same order.
 *
 * @param customerId - a valid customer id (`C-dddddd`).
 */
export function latestOrder(customerId: string): Order {
  const orderId = `O-${digits(digest('orders.latest', customerId), 8)}`;
  const facts = orderFacts(orderId);
  return {
    order_id: orderId,
    customer_id: customerId,
    status: facts.status,
    total_cents: facts.total_cents,
    placed_at: formatPlusEight(facts.placedAtMs),
  };
}

/**
 * Shipment tracking for an order. The state follows the order's status
 * (placed → pending, shipped → in_transit, delivered → delivered) and the ETA
 * is 1–7 days (plus 0–23 hours) after the order was placed.
 *
 * @param orderId - a valid order id (`O-dddddddd`).
 */
export function orderTracking(orderId: string): Tracking {
  const facts = orderFacts(orderId);
  const h = digest('shipping.track', orderId);
  const etaMs = facts.placedAtMs + (1 + ((h[1] ?? 0) % 7)) * DAY_MS + ((h[2] ?? 0) % 24) * HOUR_MS;
  return {
    order_id: orderId,
    carrier: pick(CARRIERS, h[0] ?? 0),
    state: STATE_FOR_STATUS[facts.status],
    eta: formatUtc(etaMs),
  };
}

// ---------------------------------------------------------------------------
// The wider demo domain: orders by id, refunds, billing, identity, service
// status and incidents, expense claims (see docs/DEMO-DOMAIN.md).
// ---------------------------------------------------------------------------

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

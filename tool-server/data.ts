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

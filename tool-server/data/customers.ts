/**
 * The first demo domain: CRM customers by email, their tier, their latest order and its tracking.
 */
import { DAY_MS, HOUR_MS, PLUS_EIGHT_MS, digest, digits, formatPlusEight, formatUtc, pick } from './derive.ts';

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

const FIRST_NAMES = [
  'Alice',
  'Bao',
  'Chen',
  'Dana',
  'Emeka',
  'Farah',
  'Goran',
  'Hana',
  'Ivan',
  'Jia',
  'Kofi',
  'Lena',
  'Mei',
  'Nikhil',
  'Olga',
  'Priya',
] as const;
const LAST_NAMES = [
  'Anders',
  'Brown',
  'Castillo',
  'Dubois',
  'Eriksen',
  'Fujita',
  'Garcia',
  'Huang',
  'Ito',
  'Jensen',
  'Kim',
  'Lim',
  'Mendes',
  'Novak',
  'Okafor',
  'Tan',
] as const;
const TIERS = ['gold', 'silver', 'bronze'] as const;
const ORDER_STATUSES = ['placed', 'shipped', 'delivered'] as const;
const CARRIERS = ['DHL', 'UPS', 'SF'] as const;
const STATE_FOR_STATUS: Record<OrderStatus, TrackingState> = {
  placed: 'pending',
  shipped: 'in_transit',
  delivered: 'delivered',
};

/** 2025-01-01T00:00:00+08:00 — the earliest `placed_at` that can be generated. */
export const ORDER_EPOCH_MS = Date.UTC(2025, 0, 1) - PLUS_EIGHT_MS;
export const ORDER_WINDOW_SECONDS = 365 * 24 * 3600;

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
export function orderFacts(orderId: string): { status: OrderStatus; total_cents: number; placedAtMs: number } {
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

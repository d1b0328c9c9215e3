/**
 * Deterministic fake data for the demo tool APIs.
 *
 * Every value is derived from a SHA-256 hash of the inputs (namespaced per
 * field), so the same input always yields byte-identical output and different
 * inputs yield independent values. Nothing here reads the clock, the
 * environment or `Math.random`.
 *
 *
 * One file per concern under `data/`: `params.ts` (the path parameters' patterns), `derive.ts` (the
 * hashes and fixed times every value comes from), `customers.ts` (customers, tiers, their latest
 * order and its tracking), `domain.ts` (the wider demo domain: orders by id, refunds, invoices,
 * password resets, service status and incidents, expense claims). Import from this file.
 *
 * @module
 */
export { PARAM_PATTERNS, isValidParam, type ParamField } from './data/params.ts';
export {
  customerTier,
  findCustomerByEmail,
  isUnknownCustomerEmail,
  latestOrder,
  orderTracking,
  type Carrier,
  type Customer,
  type CustomerTier,
  type CustomerTierRecord,
  type Order,
  type OrderStatus,
  type Tracking,
  type TrackingState,
} from './data/customers.ts';
export {
  DEMO_NOW_MS,
  SERVICES,
  SERVICE_STATES,
  expenseClaim,
  invoiceById,
  invoiceCopy,
  isRefundable,
  isUnknownInvoice,
  latestIncident,
  newPasswordReset,
  newRefund,
  orderById,
  serviceStatus,
  type ClaimState,
  type ExpenseClaim,
  type Incident,
  type IncidentState,
  type Invoice,
  type InvoiceCopy,
  type PasswordReset,
  type Refund,
  type RefundState,
  type ServiceName,
  type ServiceState,
  type ServiceStatus,
} from './data/domain.ts';

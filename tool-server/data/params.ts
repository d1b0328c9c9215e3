/**
 * The strict patterns the tool routes' path parameters must match (after percent-decoding).
 */

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

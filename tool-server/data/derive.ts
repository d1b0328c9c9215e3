/**
 * Where every fake value comes from: a SHA-256 of namespaced inputs (so each field is independent and
 * the same input always gives the same output), and fixed times in UTC+08:00; never the clock, the
 * environment or `Math.random`.
 */
import { createHash } from 'node:crypto';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
export const PLUS_EIGHT_MS = 8 * HOUR_MS;

/** SHA-256 of `namespace:value`; namespacing keeps each derived field independent. */
export function digest(namespace: string, value: string): Buffer {
  return createHash('sha256').update(`${namespace}:${value}`, 'utf8').digest();
}

/** Picks an element of a non-empty list using one byte of a hash. */
export function pick<T>(list: readonly [T, ...T[]], byte: number): T {
  return list[byte % list.length] ?? list[0];
}

/** `n` decimal digits (zero padded) derived from the first 6 bytes of a hash. */
export function digits(hash: Buffer, n: number): string {
  return String(hash.readUIntBE(0, 6) % 10 ** n).padStart(n, '0');
}

/** Formats an instant as RFC 3339 in UTC+08:00 with whole seconds. */
export function formatPlusEight(ms: number): string {
  return `${new Date(ms + PLUS_EIGHT_MS).toISOString().slice(0, 19)}+08:00`;
}

/** Formats an instant as RFC 3339 in UTC (`Z`) with whole seconds. */
export function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

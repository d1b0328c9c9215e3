import { isIP } from 'node:net';

/** True for addresses only this machine can reach: 127.0.0.0/8 and ::1 (in any spelling). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(h) === 4) return h.startsWith('127.');
  // The URL parser writes an IPv6 address in its canonical (compressed) form.
  return isIP(h) === 6 && new URL(`http://[${h}]/`).hostname === '[::1]';
}

import { isIP } from 'node:net';

/** True for addresses only this machine can reach: 127.0.0.0/8 and ::1 (in any spelling). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(h) === 4) return h.startsWith('127.');
  // The URL parser writes an IPv6 address in its canonical (compressed) form.
  return isIP(h) === 6 && new URL(`http://[${h}]/`).hostname === '[::1]';
}

/**
 * Why a stand-in's unauthenticated control API (faults, records) refuses to answer: anyone who
 * reaches it could fault or read every request, so it answers only when its server listens on a
 * loopback address. Null when it may answer. Both demo tool servers (HTTP and MCP) use it.
 */
export function controlRefusal(host: string, server: string): { error: 'forbidden'; message: string } | null {
  return isLoopback(host)
    ? null
    : { error: 'forbidden', message: `the control API answers only on a loopback bind address; this ${server} listens on ${host}` };
}

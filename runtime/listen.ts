/**
 * Listening and closing, for every HTTP server the project runs: the ingress, the console, each
 * process's ops server (/health, /metrics), the MCP demo tools, and the stand-ins for third-party
 * services (model-sim/, tool-server/). One place decides how a bound port is learnt, how the URL
 * is written (an IPv6 host in brackets) and that a close ends every connection, so a caller's (or
 * a test's) `close()` returns promptly instead of waiting for idle keep-alive sockets.
 */
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A listening server. */
export interface Listening {
  /** `http://<host>:<port>`, with the port bound (the free one taken when asked for 0). */
  url: string;
  port: number;
  /** Runs the caller's `beforeClose`, stops listening and closes every open connection. Idempotent. */
  close(): Promise<void>;
}

/** `http://host:port`, an IPv6 host in brackets. */
function formatUrl(host: string, port: number): string {
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}

/**
 * Listens on `host:port` (0: any free port); rejects when the port cannot be bound. `beforeClose`
 * runs first at close: what the server keeps open itself (event streams, held answers, sessions).
 */
export async function listen(server: Server, host: string, port: number, beforeClose?: () => unknown): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      await beforeClose?.();
      const closed = new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
      server.closeAllConnections();
      await closed;
    })());
  return { url: formatUrl(host, bound), port: bound, close };
}

/** How a stand-in server listens: where, its keep-alive, and what its close must clear. */
export interface StandInListen {
  host: string;
  /** 0: any free port. */
  port: number;
  /** Idle keep-alive sockets close after this many ms. */
  keepAliveTimeoutMs: number;
  /** Filled with the open sockets (their count is the server's open connections in its stats). */
  sockets: Set<Socket>;
  /** Pending timers (held or delayed answers) the server adds and removes; close clears them. */
  timers: Set<NodeJS.Timeout>;
}

/** {@link listen} for a stand-in: sets its keep-alive, counts its sockets, and clears its pending timers at close. */
export function listenStandIn(server: Server, o: StandInListen): Promise<Listening> {
  server.keepAliveTimeout = o.keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => {
    o.sockets.add(socket);
    socket.once('close', () => o.sockets.delete(socket));
  });
  return listen(server, o.host, o.port, () => {
    for (const t of o.timers) clearTimeout(t);
    o.timers.clear();
  });
}

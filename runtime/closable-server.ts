/**
 * Listening and closing for the servers that stand in for third-party services (model-sim/, the
 * model simulator; tool-server/, the demo tool server): listen on a host and port, keep the open
 * sockets, and learn the port, then a close that stops listening, clears the pending timers (held or delayed answers) and
 * destroys every open socket, so a test's `close()` returns promptly. Idempotent.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { formatUrl } from './stand-in-http.ts';

/** Where and how {@link listenClosable} listens, and the handles its close clears. */
export interface ClosableListen {
  host: string;
  /** 0: any free port. */
  port: number;
  /** Idle keep-alive sockets close after this many ms. */
  keepAliveTimeoutMs: number;
  /** Filled with the open sockets (their count is the server's open connections). */
  sockets: Set<Socket>;
  /** Pending timers (held or delayed answers) the server adds and removes. */
  timers: Set<NodeJS.Timeout>;
  /** How errors name the server: `model sim`, `tool server`. */
  name: string;
}

/** Starts `server` and returns its base URL, the bound port and its close. */
export async function listenClosable(server: Server, o: ClosableListen): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const { host, port, sockets, timers } = o;
  server.keepAliveTimeout = o.keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`${o.name}: unexpected listen address`);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
    });
    return closing;
  };
  return { url: formatUrl(host, address.port), port: address.port, close };
}

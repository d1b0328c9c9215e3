/**
 * Listening and closing for the servers that stand in for third-party services (model-sim/, the
 * model simulator; tool-server/, the demo tool server): listen on a host and port and learn the
 * port, then a close that stops listening, clears the pending timers (held or delayed answers) and
 * destroys every open socket, so a test's `close()` returns promptly. Idempotent.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Starts `server` on `host:port` (0: any free port) and returns the port and its close. */
export async function listenClosable(
  server: Server,
  host: string,
  port: number,
  handles: { sockets: Set<Socket>; timers: Set<NodeJS.Timeout> },
  name: string,
): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`${name}: unexpected listen address`);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      for (const t of handles.timers) clearTimeout(t);
      handles.timers.clear();
      for (const s of handles.sockets) s.destroy();
    });
    return closing;
  };
  return { port: address.port, close };
}

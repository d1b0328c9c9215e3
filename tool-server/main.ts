/**
 * Command-line entry point: runs the tool server until SIGINT/SIGTERM.
 *
 * Usage: `node --import tsx tool-server/main.ts` with optional environment
 * variables `TOOL_SERVER_PORT` (default 7070), `TOOL_SERVER_HOST` (default
 * 127.0.0.1) and `TOOL_SERVER_KEEP_ALIVE_MS` (default 5000).
 *
 * @module
 */
import { startToolServer } from './server.ts';

function intEnv(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new RangeError(`${name} must be an integer, got ${JSON.stringify(v)}`);
  return n;
}

const server = await startToolServer({
  port: intEnv('TOOL_SERVER_PORT'),
  host: process.env['TOOL_SERVER_HOST'] || undefined,
  keepAliveTimeoutMs: intEnv('TOOL_SERVER_KEEP_ALIVE_MS'),
});
process.stdout.write(`tool server listening on ${server.url}\n`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`tool server: close failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  });
}

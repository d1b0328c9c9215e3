/**
 * Run by tracing.test.ts as a child process, tracing pointed at an endpoint that drops every
 * connection: ends a span every 20 ms (a stage at work) and prints `tick <n>` every 10 spans, until
 * SIGTERM; then shuts tracing down within 500 ms and prints `done <ms>`. Log lines go to stdout, as
 * a stage's do.
 */
import { createLogger } from '../../runtime/log.ts';
import { startToolAttempt, startTracing } from '../../runtime/tracing/spans.ts';
import { traceparentFor } from '../../runtime/tracing/ids.ts';

const tracing = await startTracing(process.env, 'tao-unreachable', createLogger({ stage: 'test' }));
let n = 0;
const work = setInterval(() => {
  startToolAttempt(traceparentFor('run-u', 'action:1'), { tool: 't', step: 'S1', thoughtId: 'run-u', attempt: 1, method: 'GET', server: 'x' }).end({
    status: 200,
    errorType: null,
  });
  if (++n % 10 === 0) process.stdout.write(`tick ${n}\n`);
}, 20);
process.on('SIGTERM', () => {
  clearInterval(work);
  const started = Date.now();
  void tracing.shutdown(500).then(() => {
    process.stdout.write(`done ${Date.now() - started}\n`);
    process.exit(0);
  });
});

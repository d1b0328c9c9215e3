/**
 * Tracing without a broker: the traceparent ↔ span context mapping, the OTEL_* settings, and spans
 * of a stage handler and of tool attempts exported to a local OTLP/HTTP receiver, under the run's
 * deterministic ids; an unreachable endpoint costs one warning and never stops the work.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { TraceFlags } from '@opentelemetry/api';
import { ContractViolation } from '../../runtime/errors.ts';
import { createLogger } from '../../runtime/log.ts';
import type { InputRecord, OutputRecord, StageDefinition } from '../../runtime/processor.ts';
import { spanIdFor, traceIdFor, traceparentFor } from '../../runtime/tracing/ids.ts';
import { spanContextOf, startToolAttempt, startTracing, traceparentOf, traceStage, tracingSettings, type Tracing } from '../../runtime/tracing/spans.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.ts';

describe('traceparent ↔ span context', () => {
  test('a record header maps to the run trace and the writer span, and back to the same header', () => {
    const header = traceparentFor('run-1', 'action:2');
    const context = spanContextOf(header);
    assert.deepEqual(context, { traceId: traceIdFor('run-1'), spanId: spanIdFor('run-1', 'action:2'), traceFlags: TraceFlags.SAMPLED, isRemote: true });
    assert.equal(traceparentOf(context!), header);
    assert.equal(traceparentOf({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: TraceFlags.NONE }), `00-${'a'.repeat(32)}-${'b'.repeat(16)}-00`);
  });

  test('ids are the same for the same run and writer, and differ across runs and writers', () => {
    assert.equal(traceIdFor('run-1'), traceIdFor('run-1'));
    assert.notEqual(traceIdFor('run-1'), traceIdFor('run-2'));
    assert.notEqual(spanIdFor('run-1', 'action:1'), spanIdFor('run-1', 'action:2'));
    assert.match(traceIdFor('run-1'), /^[0-9a-f]{32}$/);
    assert.match(spanIdFor('run-1', 'x'), /^[0-9a-f]{16}$/);
  });

  test('headers that are not W3C trace context map to nothing', () => {
    const t = 'a'.repeat(32);
    const s = 'b'.repeat(16);
    for (const bad of [
      undefined,
      '',
      'garbage',
      `00-${t}-${s}`,
      `00-${t.toUpperCase()}-${s}-01`,
      `00-${'0'.repeat(32)}-${s}-01`,
      `00-${t}-${'0'.repeat(16)}-01`,
      `ff-${t}-${s}-01`,
      `00-${t}-${s}-01-extra`,
      `00-${t.slice(1)}-${s}-01`,
    ]) {
      assert.equal(spanContextOf(bad), null, `${bad} is refused`);
    }
    // A later version may add fields after the flags.
    assert.equal(spanContextOf(`01-${t}-${s}-01-more`)?.spanId, s);
  });
});

describe('OTEL_* settings', () => {
  test('off without an endpoint, or with OTEL_SDK_DISABLED=true', () => {
    assert.equal(tracingSettings({}, 'tao-action'), null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }, 'tao-action'), null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }, 'tao-action'), null);
  });

  test('the general endpoint gets /v1/traces, the traces endpoint is used as is, OTEL_SERVICE_NAME overrides the stage name', () => {
    assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, 'tao-action'), {
      url: 'http://collector:4318/v1/traces',
      serviceName: 'tao-action',
      scheduleDelayMs: 5000,
      genAi: false,
    });
    assert.deepEqual(
      tracingSettings(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://tempo:4318/otlp/v1/traces',
          OTEL_SERVICE_NAME: 'checkout-action',
          OTEL_BSP_SCHEDULE_DELAY: '200',
        },
        'tao-action',
      ),
      {
        url: 'https://tempo:4318/otlp/v1/traces',
        serviceName: 'checkout-action',
        scheduleDelayMs: 200,
        genAi: false,
      },
    );
  });

  test('a bad value is a one-line error naming the variable', () => {
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL, got "collector:4318"$/],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http\(s\) URL/],
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_SCHEDULE_DELAY: 'soon' },
        /^OTEL_BSP_SCHEDULE_DELAY must be an integer number of milliseconds from 0 to 3600000, got "soon"$/,
      ],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /^OTEL_EXPORTER_OTLP_PROTOCOL must be http\/json .*got "grpc"$/],
    ];
    for (const [env, message] of cases)
      assert.throws(
        () => tracingSettings(env, 'tao-action'),
        (err: Error) => message.test(err.message) && !err.message.includes('\n'),
      );
  });
});

describe('spans exported to an OTLP/HTTP receiver', () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing;
  before(async () => {
    receiver = await startOtlpReceiver();
    tracing = await startTracing(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '20' },
      'tao-action',
      createLogger({}, { write: () => undefined }),
    );
  });
  after(async () => {
    await tracing?.shutdown();
    await receiver?.close();
  });

  const SECRET = `s3cret-${Math.random().toString(36).slice(2)}`;
  const record = (key: string, offset: string, header: string | undefined): InputRecord => ({
    topic: 'thoughtRequests',
    partition: 3,
    offset,
    key,
    value: { thought_id: key, iteration: 2, note: SECRET },
    headers: header === undefined ? {} : { traceparent: header },
  });
  const stage = (fail = false) =>
    traceStage<StageDefinition>(
      {
        stage: 'action',
        inputs: ['thoughtRequests'],
        outputs: ['actionResults'],
        concurrency: 1,
        maxRecordsPerTransaction: 10,
        maxInputBytes: 1000,
        async handle(r): Promise<OutputRecord[]> {
          if (fail) throw new ContractViolation('step S1 names unknown tool "nope"', { code: 'UNKNOWN_TOOL' });
          return [{ topic: 'actionResults', key: r.key, value: { secret: SECRET }, span: 'action:2' }];
        },
      },
      (r) => ({ 'tao.iteration': (r.value as { iteration: number }).iteration }),
    );

  test('a committed record gets a span with its writer id, a child of its traceparent, after the commit only', async () => {
    const def = stage();
    const aborted = record('run-aborted', '7', traceparentFor('run-aborted', 'thought:observation:1'));
    await def.handle(aborted, { get: () => undefined });
    const input = record('run-1', '8', traceparentFor('run-1', 'thought:observation:1'));
    const outputs = await def.handle(input, { get: () => undefined });
    const byTrace = (id: string) => receiver.spans.filter((s) => s.traceId === id);
    assert.equal(byTrace(traceIdFor('run-1')).length, 0, 'nothing is exported before the commit');
    def.committed!([{ input, outputs }]);
    await receiver.waitUntil(() => byTrace(traceIdFor('run-1')).length > 0, 10000, 'the committed record span');
    const [span] = byTrace(traceIdFor('run-1'));
    assert.equal(span!.spanId, spanIdFor('run-1', 'action:2'), 'the span is the writer its output header names');
    assert.equal(span!.parentSpanId, spanIdFor('run-1', 'thought:observation:1'), 'a child of the incoming header');
    assert.equal(span!.service, 'tao-action');
    assert.equal(span!.name, 'process thoughtRequests');
    assert.deepEqual(
      { ...span!.attributes },
      {
        'tao.stage': 'action',
        'tao.thought_id': 'run-1',
        'tao.iteration': 2,
        'tao.outputs': ['actionResults'],
        'messaging.system': 'kafka',
        'messaging.operation.type': 'process',
        'messaging.destination.name': 'thoughtRequests',
        'messaging.destination.partition.id': '3',
        'messaging.kafka.offset': 8,
      },
    );
    assert.ok(span!.endNs >= span!.startNs);
    assert.equal(
      byTrace(traceIdFor('run-aborted')).length,
      0,
      'the record of a transaction that never committed has no span, though it was handled before the one exported',
    );
    assert.ok(!receiver.bodies.join('').includes(SECRET), 'no payload reaches a span');
  });

  test('a record without a header still lands in its run trace, as a root span', async () => {
    const def = stage();
    const input = record('run-2', '9', undefined);
    def.committed!([{ input, outputs: await def.handle(input, { get: () => undefined }) }]);
    await receiver.waitUntil((spans) => spans.some((s) => s.traceId === traceIdFor('run-2')), 10000, 'the span of run-2');
    const span = receiver.spans.find((s) => s.traceId === traceIdFor('run-2'))!;
    assert.equal(span.parentSpanId, '');
    assert.equal(span.spanId, spanIdFor('run-2', 'action:2'));
  });

  test('a handler that throws gets an error span at once, with the error code and not the message', async () => {
    const def = stage(true);
    await assert.rejects(def.handle(record('run-3', '10', traceparentFor('run-3', 'thought:observation:1')), { get: () => undefined }), /unknown tool/);
    await receiver.waitUntil((spans) => spans.some((s) => s.traceId === traceIdFor('run-3')), 10000, 'the error span of run-3');
    const span = receiver.spans.find((s) => s.traceId === traceIdFor('run-3'))!;
    assert.equal(span.statusCode, 2);
    assert.equal(span.attributes['error.type'], 'UNKNOWN_TOOL');
    assert.equal(span.attributes['tao.retriable'], false);
    assert.equal(span.parentSpanId, spanIdFor('run-3', 'thought:observation:1'));
    assert.notEqual(span.spanId, spanIdFor('run-3', 'action:2'), 'no output was written, so the span names no writer');
    assert.ok(!receiver.bodies.join('').includes('nope'), 'nor an error message (it may quote input)');
  });

  test('a tool attempt is a client span under the Action span, and the header sent names it', async () => {
    const parent = traceparentFor('run-4', 'action:1');
    const attempt = startToolAttempt(parent, {
      tool: 'crm.find_customer',
      step: 'S1',
      thoughtId: 'run-4',
      attempt: 2,
      method: 'GET',
      server: '127.0.0.1:1234',
    });
    const sent = spanContextOf(attempt.traceparent)!;
    assert.equal(sent.traceId, traceIdFor('run-4'));
    assert.notEqual(sent.spanId, spanIdFor('run-4', 'action:1'));
    attempt.end({ status: 503, errorType: 'http_status' });
    await receiver.waitUntil((spans) => spans.some((s) => s.traceId === traceIdFor('run-4')), 10000, 'the attempt span');
    const span = receiver.spans.find((s) => s.traceId === traceIdFor('run-4'))!;
    assert.equal(span.spanId, sent.spanId);
    assert.equal(span.parentSpanId, spanIdFor('run-4', 'action:1'));
    assert.equal(span.name, 'tool crm.find_customer');
    assert.equal(span.kind, 3, 'SPAN_KIND_CLIENT');
    assert.deepEqual(span.attributes, {
      'tao.tool': 'crm.find_customer',
      'tao.step': 'S1',
      'tao.thought_id': 'run-4',
      'tao.attempt': 2,
      'http.request.method': 'GET',
      'server.address': '127.0.0.1:1234',
      'http.response.status_code': 503,
      'tao.status': 'http_status',
      'error.type': 'http_status',
    });
  });
});

test('an endpoint that drops every connection costs one warning, never stops the work, and shutdown is bounded', { timeout: 60000 }, async () => {
  let connections = 0;
  const dropper = createServer((socket: Socket) => {
    connections++;
    socket.destroy();
  });
  dropper.listen(0, '127.0.0.1');
  await once(dropper, 'listening');
  const { port } = dropper.address() as AddressInfo;
  const script = fileURLToPath(new URL('./tracing-unreachable.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: {
      ...process.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_BSP_SCHEDULE_DELAY: '20',
      OTEL_EXPORTER_OTLP_TIMEOUT: '200',
      TAO_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let warnedAt = -1;
  let ticksSince = 0;
  const progress = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      out += text;
      if (warnedAt < 0 && out.includes('trace export failed')) warnedAt = connections;
      else if (warnedAt >= 0) ticksSince += text.split('tick ').length - 1;
      // Three more exports failed after the first warning, and the work went on meanwhile.
      if (warnedAt >= 0 && connections >= warnedAt + 3 && ticksSince > 0) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the child exited early (${code}): ${out}`)));
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 45000);
  try {
    await progress;
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, out);
  } finally {
    clearTimeout(timer);
    dropper.close();
  }
  const lines = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; msg: string });
  assert.equal(lines.filter((l) => l.msg.startsWith('trace export failed')).length, 1, `one warning for ${connections} failed connections: ${out}`);
  const done = /done (\d+)/.exec(out);
  assert.ok(done && Number(done[1]) <= 1000, `shutdown took ${done?.[1]} ms`);
});

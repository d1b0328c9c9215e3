// test-needs: kafka
/**
 * Tracing made true: the three real stages, pointed at a local OTLP/HTTP receiver, export spans
 * that stitch each run into one trace — the trace id its records carry — with a span per handled
 * record in each stage, a span per tool attempt under Action's, and parent links that follow the
 * record headers.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { spanContextOf } from '../../runtime/tracing/spans.ts';
import type { ActionResult } from '../../schemas/types.gen.ts';
import type { LoopRecord } from '../../client/watch.ts';
import { followOutcomes, scan, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';

let receiver: OtlpReceiver;
let loop: RunningLoop;

before(async () => {
  receiver = await startOtlpReceiver();
  loop = await startLoop({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' });
});

after(async () => {
  await loop?.stop();
  await receiver?.close();
});

const WRITER: Record<string, string> = {
  thoughtRequests: 'tao-thought',
  outcomes: 'tao-thought',
  actionResults: 'tao-action',
  observationResults: 'tao-observation',
};

test(
  'each run is one trace across the three stages, with its tool calls under Action and parent links that follow the records',
  { timeout: 240000 },
  async () => {
    const { cluster, tools } = loop;
    // The first customer lookup of the "retry" run answers 503 once: its step has two attempt spans.
    tools.setFault({ route: 'crm.find_customer', mode: 'server_error', times: 1, match: 'retry' });
    const tasks = ['a', 'b', 'c', 'retry'].map((who, i) =>
      buildTask({ text: `Where is my order? ${who}${i}@example.com`, source: 'test', external_id: `${cluster.namespace}-${i}` }),
    );
    const ids = new Set(tasks.map((t) => t.thought_id));
    const follower = await followOutcomes(cluster);
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, tasks);
    await producer.disconnect();
    await follower.waitUntil((o) => [...ids].every((id) => o.has(id)), 120000);
    await follower.stop();

    const records = (
      await scan(cluster, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'], {
        until: (rs) => rs.filter((r) => r.topic === 'outcomes' && ids.has(r.key)).length >= ids.size,
      })
    ).filter((r) => ids.has(r.key));
    const written = records.filter((r) => r.topic !== 'tasks');
    const headerSpan = (r: LoopRecord) => spanContextOf(r.headers.traceparent)?.spanId;

    // Spans are exported after the commit and in batches: wait until every written record's writer span arrived.
    await receiver.waitUntil(
      (spans) => {
        const seen = new Set(spans.map((s) => s.spanId));
        return written.every((r) => seen.has(headerSpan(r) ?? '-'));
      },
      60000,
      `the writer span of each of ${written.length} records`,
    );

    const spans = receiver.spans;
    const byId = new Map<string, ReceivedSpan>(spans.map((s) => [s.spanId, s]));
    const recordAt = new Map(records.map((r) => [`${r.topic}/${r.partition}/${r.offset}`, r]));
    for (const id of ids) {
      const mine = records.filter((r) => r.key === id);
      const traceIds = new Set(mine.map((r) => spanContextOf(r.headers.traceparent)?.traceId));
      assert.equal(traceIds.size, 1, `the records of ${id} carry one trace id`);
      const [traceId] = [...traceIds] as [string];
      const trace = spans.filter((s) => s.traceId === traceId);
      assert.deepEqual(
        new Set(spans.filter((s) => s.attributes['tao.thought_id'] === id).map((s) => s.traceId)),
        new Set([traceId]),
        `every span of ${id} is in its records' trace`,
      );
      assert.ok(
        trace.every((s) => s.attributes['tao.thought_id'] === id),
        `the trace of ${id} holds only its spans`,
      );
      assert.deepEqual(new Set(trace.map((s) => s.service)), new Set(['tao-thought', 'tao-action', 'tao-observation']), `${id}: spans from the three stages`);

      // Each record a stage wrote names, as its parent, the span of the stage handling that wrote it.
      for (const r of mine.filter((m) => m.topic !== 'tasks')) {
        const writer = byId.get(headerSpan(r)!)!;
        assert.equal(writer.service, WRITER[r.topic], `${r.topic} of ${id} was written by a ${WRITER[r.topic]} span`);
        assert.equal(writer.kind, 5, 'a record span is a consumer span');
      }
      // And each record span is a child of the header of the record it handled.
      const recordSpans = trace.filter((s) => s.name.startsWith('process '));
      assert.ok(recordSpans.length >= 3 * 3, `${id}: a span per handled record (${recordSpans.length})`);
      for (const s of recordSpans) {
        const input = recordAt.get(
          `${s.attributes['messaging.destination.name']}/${s.attributes['messaging.destination.partition.id']}/${s.attributes['messaging.kafka.offset']}`,
        );
        assert.ok(input, `${s.service} ${s.name} names the record it handled`);
        assert.equal(s.parentSpanId, headerSpan(input), `${s.service} ${s.name} is a child of its input's traceparent`);
        assert.ok(s.endNs >= s.startNs);
      }

      // Tool attempts: client spans under the Action span of their wave, one or more per executed step.
      const toolSpans = trace.filter((s) => s.name.startsWith('tool '));
      for (const t of toolSpans) {
        const parent = byId.get(t.parentSpanId);
        assert.ok(
          parent && parent.service === 'tao-action' && parent.name === 'process thoughtRequests',
          `tool span ${t.name} sits under an Action record span`,
        );
        assert.equal(t.kind, 3);
        assert.equal(t.attributes['tao.thought_id'], id);
      }
      for (const r of mine.filter((m) => m.topic === 'actionResults')) {
        const under = toolSpans.filter((t) => t.parentSpanId === headerSpan(r));
        for (const step of (r.value as unknown as ActionResult).results) {
          const attempts = under.filter((t) => t.attributes['tao.step'] === step.step_id && t.attributes['tao.tool'] === step.tool);
          assert.ok(attempts.length >= step.attempts, `${id} ${step.step_id}: ${attempts.length} attempt spans for ${step.attempts} attempts`);
        }
      }
    }

    // The retried lookup: two attempts, the first a 503, the second a 200, each sent with its own span as parent.
    const retried = tasks.find((t) => t.text.includes('retry'))!.thought_id;
    const lookups = spans
      .filter((s) => s.attributes['tao.thought_id'] === retried && s.attributes['tao.tool'] === 'crm.find_customer')
      .sort((a, b) => Number(a.attributes['tao.attempt']) - Number(b.attributes['tao.attempt']));
    assert.deepEqual(
      lookups.map((s) => [s.attributes['tao.attempt'], s.attributes['http.response.status_code'], s.statusCode]),
      [
        [1, 503, 2],
        [2, 200, 0],
      ],
    );
    const sent = tools.stats().requests.filter((r) => r.headers['idempotency-key']?.startsWith(`${retried}:`));
    const attemptIds = new Set(spans.filter((s) => s.name.startsWith('tool ')).map((s) => s.spanId));
    assert.ok(
      sent.length > 0 && sent.every((r) => attemptIds.has(spanContextOf(r.headers.traceparent ?? undefined)?.spanId ?? '-')),
      'every tool request carried the traceparent of its attempt span',
    );
    // No payload leaves the process in a span: not the customer's e-mail, not a tool's answer.
    assert.ok(!receiver.bodies.join('').includes('@example.com'), 'no step input in any span');
  },
);

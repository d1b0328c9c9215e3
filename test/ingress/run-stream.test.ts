// test-needs: kafka
/**
 * `GET /v1/runs/{thought_id}/events` on the real broker: a client cut off after 3 events reconnects
 * with `Last-Event-ID`, while Thought is killed -9 mid-run; what it received, joined, is every
 * committed record of the run once, each after the record that caused it, and the same sequence an
 * unbroken stream opened after the run gives. Also: the cap on open streams, the read scope, and
 * `GET /v1/runs/{thought_id}`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hashApiKey, newApiKey, type ApiKeyEntry } from '../../ingress/api-keys.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { createLogger } from '../../runtime/log.ts';
import { CAUSE_HEADER, parseCause } from '../../runtime/run-stream/cause.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';
import type { Producer } from 'kafkajs';

interface SseEvent {
  id: string;
  event: string;
  data: { record: { topic: string; partition: number; offset: string }; [k: string]: unknown };
}

const keys = { reader: newApiKey(), submitter: newApiKey() };
const entries: ApiKeyEntry[] = [
  { id: 'reader', sha256: hashApiKey(keys.reader), sources: ['*'], rate_per_minute: 6000, scopes: ['read'] },
  { id: 'submitter', sha256: hashApiKey(keys.submitter), sources: ['*'], rate_per_minute: 6000, scopes: ['tasks'] },
];

let tools: ToolServer;
let cluster: TestCluster;
let fleet: StageFleet;
let producer: Producer;
let ingress: Ingress;

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  fleet = new StageFleet(cluster.env);
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 65536, maxStreams: 1, streamHeartbeatMs: 500, auth: { mode: 'keys', keys: entries } },
    { producer, codec: cluster.codec, logger: createLogger({ test: 'run-stream' }, { level: 'error' }), kafka: cluster.kafka },
  );
});
after(async () => {
  await ingress?.close();
  await producer?.disconnect();
  await fleet?.stop();
  await tools?.close();
});

/** Reads `path` as SSE until it closes, or until `stopAfter` events (then aborts the connection). */
async function readStream(
  path: string,
  headers: Record<string, string>,
  stopAfter = Infinity,
): Promise<{ status: number; events: SseEvent[]; body?: unknown }> {
  const abort = new AbortController();
  const res = await fetch(`${ingress.url}${path}`, { headers, signal: abort.signal });
  if (res.status !== 200) return { status: res.status, events: [], body: await res.json() };
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const events: SseEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = res.body!.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const fields = Object.fromEntries(
          block
            .split('\n')
            .filter((l) => !l.startsWith(':'))
            .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
        );
        if (fields.event === undefined) continue;
        assert.notEqual(fields.event, 'error', `the stream reported an error: ${fields.data}`);
        events.push({ id: fields.id!, event: fields.event, data: JSON.parse(fields.data!) });
        if (events.length >= stopAfter) {
          abort.abort();
          return { status: 200, events };
        }
      }
    }
  } catch (err) {
    if (!abort.signal.aborted) throw err;
  }
  return { status: 200, events };
}

const read = { authorization: `Bearer ${keys.reader}` };
const ref = (e: SseEvent) => `${e.data.record.topic}:${e.data.record.offset}`;

test(
  'a stream cut after 3 events and resumed with Last-Event-ID, Thought killed -9 mid-run, joins to every committed record of the run once, in causal order',
  { timeout: 240000 },
  async () => {
    // Without Observation the run stops after its first wave's results: the kill lands mid-run for sure.
    const thought = await fleet.start('thought');
    await fleet.start('action');
    const submitted = await fetch(`${ingress.url}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.submitter}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'order status for ada@example.com', source: 'support', external_id: `${cluster.namespace}-1` }),
    });
    assert.equal(submitted.status, 202);
    const { thought_id: id } = (await submitted.json()) as { thought_id: string };

    assert.equal((await readStream(`/v1/runs/${id}/events`, {}, 1)).status, 401, 'no key, no stream');
    const wrongScope = await readStream(`/v1/runs/${id}/events`, { authorization: `Bearer ${keys.submitter}` }, 1);
    assert.equal(wrongScope.status, 403, 'a key without the read scope');

    const first = await fleet.explained(readStream(`/v1/runs/${id}/events`, read, 3), cluster);
    assert.deepEqual(
      first.events.map((e) => e.event),
      ['task', 'wave', 'results'],
    );

    thought.child.kill('SIGKILL');
    assert.equal(await thought.exited, 'SIGKILL');
    await Promise.all([fleet.start('thought'), fleet.start('observation')]);

    const resumed = readStream(`/v1/runs/${id}/events`, { ...read, 'last-event-id': first.events[2]!.id });
    // The cap (1 stream here) holds while the resumed stream is open; the cut one was released.
    await new Promise((r) => setTimeout(r, 300));
    const second = await readStream(`/v1/runs/${id}/events`, read, 1);
    assert.equal(second.status, 429);
    assert.equal((second.body as { error: string }).error, 'too_many_streams');
    const rest = await fleet.explained(resumed, cluster);
    const joined = [...first.events, ...rest.events];
    assert.equal(joined.at(-1)!.event, 'outcome', 'the stream closes after the outcome');
    assert.equal(joined.at(-1)!.data.status, 'completed');

    // Every committed record of the run, once.
    const records = (await scanToEnd(cluster, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'])).filter((r) => r.key === id);
    const names = new Map(records.map((r) => [cluster.codec.topics.name(r.topic), r.topic]));
    const committed = records.map((r) => `${cluster.codec.topics.name(r.topic)}:${r.offset}`);
    assert.deepEqual(new Set(joined.map(ref)).size, joined.length, 'no event twice');
    assert.deepEqual([...joined.map(ref)].sort(), [...committed].sort(), 'the events are exactly the committed records');

    // Each after its cause, and each topic in offset order.
    const position = new Map(joined.map((e, i) => [`${names.get(e.data.record.topic)}:${e.data.record.offset}`, i]));
    for (const r of records) {
      const cause = parseCause(r.headers[CAUSE_HEADER]);
      if (r.topic === 'tasks') continue;
      assert.ok(cause, `${r.topic}@${r.offset} names its cause`);
      assert.ok(position.get(`${cause.topic}:${cause.offset}`)! < position.get(`${r.topic}:${r.offset}`)!, `${r.topic}@${r.offset} comes after its cause`);
    }

    // An unbroken stream opened now is the same sequence, ids and all.
    const unbroken = await readStream(`/v1/runs/${id}/events`, read);
    assert.deepEqual(
      unbroken.events.map((e) => [e.id, e.event, ref(e)]),
      joined.map((e) => [e.id, e.event, ref(e)]),
    );

    // The ticket's stream is the same run's.
    const ticket = await readStream(`/v1/runs/events?source=support&external_id=${cluster.namespace}-1&after=${encodeURIComponent(first.events[2]!.id)}`, read);
    assert.deepEqual(ticket.events.map(ref), rest.events.map(ref));

    const state = await fetch(`${ingress.url}/v1/runs/${id}`, { headers: read });
    assert.equal(state.status, 200);
    const body = (await state.json()) as { status: string; waves: number; steps: Array<{ state: string }>; cursor: string };
    assert.equal(body.status, 'completed');
    assert.ok(body.waves >= 1 && body.steps.length >= 1 && body.steps.every((s) => s.state === 'valid'), JSON.stringify(body));
    assert.equal(body.cursor, joined.at(-1)!.id);
    const unknown = await fetch(`${ingress.url}/v1/runs/no-such-run`, { headers: read });
    assert.equal(unknown.status, 404);
  },
);

// test-needs: kafka, quiet
/**
 * Observability under load, on the real broker and registry with the three stages as processes and a
 * real tool server injecting faults (timeouts, 5xx, 401): after 100 runs, every counter the stages
 * export matches what the log holds, the three run-level rates equal their definitions computed
 * from the log, every record of a run carries the run's trace, and `tail` and `status`, run as
 * processes while the load runs, show it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import type { IHeaders } from 'kafkajs';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LoopRecord } from '../../client/watch.ts';
import { followFromBeginning } from '../../runtime/follow.ts';
import { evidenceComplete, waveFailures } from '../../processors/rates.ts';
import type { StatusReport } from '../../observability/status.ts';
import { DLQ_HEADERS } from '../../runtime/processor.ts';
import type { ActionResult, ObservationResult, Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { TopicId } from '../../topics/catalog.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { catalogCopy } from '../helpers/catalog.ts';
import { StageFleet, followOutcomes, freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { runState } from '../../schemas/records.ts';
import { samples, scrape, type Sample } from './metrics-text.ts';

const RUNS = 100;
/** Runs whose first tool call is held by the tool server for a while, so `status` sees runs in flight. */
const HELD = 5;
const SECRET = `Bearer tok-${Math.random().toString(36).slice(2)}`;
const CLI_ENTRY = new URL('./cli-entry.ts', import.meta.url).pathname;

let tools: ToolServer;
let backup: ToolServer;
let cluster: TestCluster;
let fleet: StageFleet;
let ports: { thought: number; action: number; observation: number };

before(async () => {
  tools = await startToolServer({ port: 0 });
  backup = await startToolServer({ port: 0 });
  // The shipped catalog with short timeouts (so injected timeouts cost 300 ms, not 2 s), quick
  // retries, and a breaker plus a fallback on crm.tier.
  let backupSpec: Record<string, unknown> = {};
  const dir = catalogCopy('tao-obs-catalog', (spec) => {
    const held = spec.name === 'crm.find_customer';
    Object.assign(spec, { timeoutMs: held ? 6000 : 300, retry: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 100 } });
    if (spec.name === 'crm.tier') {
      Object.assign(spec, { breaker: { failureThreshold: 4, coolDownMs: 1500 }, fallbackTool: 'crm.tier_backup' });
      backupSpec = { ...spec, name: 'crm.tier_backup', origin: backup.url, breaker: undefined, fallbackTool: undefined };
    }
  });
  writeFileSync(join(dir, 'crm.tier_backup.json'), JSON.stringify(backupSpec));
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_TOOL_CATALOG_DIR: dir });
  fleet = new StageFleet(cluster.env);
  const [thought, action, observation] = await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  ports = { thought: thought.opsPort, action: action.opsPort, observation: observation.opsPort };
});

after(async () => {
  await fleet?.stop();
  await Promise.all([tools?.close(), backup?.close()]);
});

/** A `tail` or `status` process (test/observability/cli-entry.ts), its output kept line by line. */
function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; lines: string[]; stderr: string[]; exited: Promise<number | null>; waitFor(re: RegExp, timeoutMs: number): Promise<string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI_ENTRY, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const stderr: string[] = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: child.stdout! }).on('line', (l) => {
    lines.push(l);
    for (const w of waiters.splice(0)) w();
  });
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = async (re: RegExp, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = lines.find((l) => re.test(l));
      if (hit) return hit;
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`no line matching ${re} (exit ${child.exitCode}):\n${lines.slice(-20).join('\n')}\n${stderr.slice(-20).join('\n')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 500);
        waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
  };
  return { child, lines, stderr, exited, waitFor };
}

/** Polls `check` until it stops throwing (the stages count right after their commit is visible). */
async function eventually<T>(check: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Raw records (bytes and headers) of `topics` from the beginning to their current end. */
async function readRaw(topics: string[]): Promise<Array<{ topic: string; key: string; headers: Record<string, string> }>> {
  const out: Array<{ topic: string; key: string; headers: Record<string, string> }> = [];
  const follower = await followFromBeginning(cluster.kafka, topics, {
    groupPrefix: `${cluster.namespace}.test-raw`,
    onMessage: (topic, _, m) => void out.push({ topic, key: m.key?.toString() ?? '', headers: headerStrings(m.headers) }),
  });
  await follower.reachedEnd;
  await follower.stop();
  return out;
}

/** Decoded records of loop topics from the beginning to the end every partition had when reading started. */
async function readLog(ids: TopicId[]): Promise<LoopRecord[]> {
  const byName = new Map(ids.map((id) => [cluster.codec.topics.name(id), id]));
  const raw: Array<{ topic: TopicId; partition: number; offset: string; key: string; value: Buffer | null; headers: Record<string, string> }> = [];
  const follower = await followFromBeginning(cluster.kafka, [...byName.keys()], {
    groupPrefix: `${cluster.namespace}.test-log`,
    onMessage: (topic, partition, m) =>
      void raw.push({
        topic: byName.get(topic)!,
        partition,
        offset: m.offset,
        key: m.key?.toString() ?? '',
        value: m.value,
        headers: headerStrings(m.headers),
      }),
  });
  await follower.reachedEnd;
  await follower.stop();
  const out: LoopRecord[] = [];
  for (const r of raw) {
    // The injected records no stage could read; the wave naming an unknown tool decodes, and its run is told.
    if (r.key.startsWith('garbage') && r.key !== 'garbage-tool') continue;
    out.push({ ...r, value: await cluster.codec.decode<LoopRecord['value']>(r.topic, r.value) });
  }
  return out;
}

function headerStrings(headers: IHeaders | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).flatMap(([k, v]) => (v === undefined ? [] : [[k, v.toString()]])));
}

const traceId = (traceparent: string | undefined) => /^00-([0-9a-f]{32})-[0-9a-f]{16}-01$/.exec(traceparent ?? '')?.[1];

/** Sum of the samples of `name` across processes, grouped by the given labels. */
function totals(all: Sample[], name: string, by: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples(all, name)) {
    const key = by.map((l) => s.labels[l]).join('|');
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const i of items) out.set(key(i), (out.get(key(i)) ?? 0) + 1);
  return out;
}

const sorted = (m: Map<string, number>) => [...m].sort(([a], [b]) => a.localeCompare(b));

test(
  `${RUNS} runs with injected tool faults: counters match the log, the rates match their definitions, one trace per run, tail and status show the load`,
  { timeout: 420000 },
  async (t) => {
    const cliEnv = {
      ...cluster.env,
      TAO_STATUS_ENDPOINTS: `http://127.0.0.1:${ports.thought},http://127.0.0.1:${ports.action},http://127.0.0.1:${ports.observation},http://127.0.0.1:1`,
    };
    const tail = cli(['tail', '--summary-s', '1'], cliEnv);
    const tasks: Task[] = Array.from({ length: RUNS }, (_, i) =>
      buildTask({
        text:
          i < HELD ? `Where is my order? held${i}@example.com` : `Where is my order? load${i}@example.com${i === HELD ? ` (Authorization: ${SECRET})` : ''}`,
        source: 'obs-test',
        external_id: `${cluster.namespace}-${i}`,
      }),
    );
    const watched = tasks[HELD + 1]!.thought_id.slice(0, 8);
    const tailOne = cli(['tail', '--thought', watched, '--summary-s', '0'], cliEnv);
    await Promise.all([tail.waitFor(/^tailing /, 60000), tailOne.waitFor(/^tailing /, 60000)]);

    // Faults: the first matching fault fires; rates are deterministic per route (every 5th, 10th, ...).
    tools.setFault({ route: 'crm.find_customer', mode: 'timeout', match: 'held', delayMs: 4000 });
    tools.setFault({ route: 'orders.latest', mode: 'timeout', rate: 0.2, delayMs: 1000 });
    tools.setFault({ route: 'crm.tier', mode: 'timeout', rate: 0.2, delayMs: 1000 });
    tools.setFault({ route: 'shipping.track', mode: 'timeout', rate: 0.2, delayMs: 1000 });
    tools.setFault({ route: 'orders.latest', mode: 'server_error', rate: 0.1 });
    tools.setFault({ route: 'crm.tier', mode: 'server_error', rate: 0.15 });
    tools.setFault({ route: 'shipping.track', mode: 'auth_failed', rate: 0.05 });

    const follower = await followOutcomes(cluster);
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, tasks);

    // Records no stage can process: garbage bytes, and a wave naming a tool the catalog lacks.
    const unknownTool: ThoughtRequest = {
      thought_id: 'garbage-tool',
      iteration: 1,
      run: runState(),
      steps: [{ step_id: 'S1', tool: 'billing.refund_everything', input_json: '{}', idempotency_key: 'garbage-tool:1:S1', attempt: 1 }],
    };
    const injected: Array<[TopicId, string, Buffer]> = [
      ['tasks', 'garbage-1', Buffer.from('not avro')],
      ['tasks', 'garbage-2', Buffer.from([0, 0, 0])],
      ['tasks', 'garbage-3', Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0x00]), Buffer.from('no such schema')])],
      ['thoughtRequests', 'garbage-tool', await cluster.codec.encode('thoughtRequests', unknownTool)],
      ['actionResults', 'garbage-4', Buffer.from('{"json":"is not avro"}')],
      ['actionResults', 'garbage-5', Buffer.from([0])],
      ['observationResults', 'garbage-6', Buffer.from('garbage')],
    ];
    for (const [topic, key, value] of injected) await producer.send({ topic: cluster.codec.topics.name(topic), acks: -1, messages: [{ key, value }] });
    await producer.disconnect();

    // While the load runs: Thought reports runs in flight, and `status` shows lag, runs, breakers, dead letters.
    await eventually(async () => {
      const inFlight = samples(await scrape(ports.thought), 'tao_runs_in_flight')[0]?.value ?? 0;
      assert.ok(inFlight > 0, `Thought reports runs in flight (${inFlight})`);
    }, 30000);
    const live = cli(['status', '--json'], cliEnv);
    assert.equal(await live.exited, 0, live.stderr.join('\n'));
    const report = JSON.parse(live.lines.join('\n')) as StatusReport;
    assert.equal(follower.outcomes.size < RUNS, true, 'status ran while runs were still going');
    assert.deepEqual(
      [...new Set(report.lag.map((r) => r.group))].sort(),
      ['action', 'observation', 'thought'].map((s) => `${cluster.namespace}.tao-${s}`),
    );
    assert.equal(report.lag.length, 4 * 6, 'a row per partition of each group input (thought reads two topics)');
    assert.ok(report.runs && report.runs.readToEnd && report.runs.running >= HELD, `the held runs are in flight: ${JSON.stringify(report.runs)}`);
    assert.deepEqual(
      report.deadLetters.map((d) => d.topic).sort(),
      ['tasks', 'thoughtRequests', 'actionResults', 'observationResults'].map((t) => cluster.codec.topics.dlq(t as TopicId)).sort(),
    );
    // Each group with its one member. A group can be mid-rebalance at any one moment (on a freshly
    // started broker a first transaction can fail while the coordinators load, and the consumer
    // rejoins), so this is read again until it settles; two fresh-clone runs caught one at the first read.
    await eventually(async () => {
      const again = cli(['status', '--json'], cliEnv);
      assert.equal(await again.exited, 0, again.stderr.join('\n'));
      const groups = (JSON.parse(again.lines.join('\n')) as StatusReport).groups;
      assert.ok(groups.length === 3 && groups.every((g) => g.members === 1 && g.state === 'Stable'), JSON.stringify(groups));
    }, 30000);
    const actionHealth = report.endpoints.find((e) => e.stage === 'action');
    // Breakers appear once their tool was first called; the settled status below shows crm.tier's.
    assert.ok(actionHealth?.reachable && actionHealth.breakers !== undefined, `the action process reports its breakers: ${JSON.stringify(report.endpoints)}`);
    assert.deepEqual(
      report.endpoints.filter((e) => !e.reachable).map((e) => e.url),
      ['http://127.0.0.1:1'],
      `an unreachable endpoint is reported, not fatal: ${JSON.stringify(report.endpoints)}`,
    );

    await fleet.explained(
      follower.waitUntil((o) => tasks.every((t) => o.has(t.thought_id)), 240000),
      cluster,
    );
    await follower.stop();

    // The log, as committed, read to the end of every partition (the last outcome is the last record of its run).
    const records = await readLog(['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']);
    const ours = new Set(tasks.map((t) => t.thought_id));
    const of = <T>(topic: TopicId) => records.filter((r) => r.topic === topic && ours.has(r.key)).map((r) => r.value as unknown as T);
    const outcomes = of<Outcome>('outcomes');
    const actionResults = of<ActionResult>('actionResults');
    const observations = of<ObservationResult>('observationResults');
    assert.equal(outcomes.length, RUNS, 'one outcome per run (no run was parked and resumed)');
    const dlqTopics = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults'].map((t) => cluster.codec.topics.dlq(t as TopicId));
    const letters = await eventually(async () => {
      const read = await readRaw(dlqTopics);
      assert.equal(read.length, injected.length, 'every injected record is dead-lettered');
      return read;
    }, 60000);
    // The injected wave naming an unknown tool belongs to no task, but its dead letter ends its run like any.
    const told = records.filter((r) => r.topic === 'outcomes' && r.key === 'garbage-tool').map((r) => r.value as unknown as Outcome);
    assert.deepEqual(
      told.map((o) => [o.status, o.reason_code, o.dead_letter?.code]),
      [['failed', 'dead_letter', 'UNKNOWN_TOOL']],
    );
    const statuses = countBy([...outcomes, ...told], (o) => o.status);
    assert.ok(
      (statuses.get('completed') ?? 0) > 0 && (statuses.get('completed') ?? 0) < RUNS,
      `the faults make some runs fail: ${JSON.stringify([...statuses])}`,
    );

    // Outcomes by status and reason: Thought's counter equals the tao.outcomes records.
    const logOutcomes = countBy([...outcomes, ...told], (o) => `${o.status}|${o.reason_code}`);
    const thought = await eventually(async () => {
      const m = await scrape(ports.thought);
      assert.deepEqual(sorted(totals(m, 'tao_runs_ended_total', ['status', 'reason_code'])), sorted(logOutcomes));
      return m;
    }, 30000);

    // Dead letters: the counters of all three processes equal the .dlq records, by source topic and error code.
    const logLetters = countBy(letters, (l) => `${l.headers[DLQ_HEADERS.sourceTopic]}|${l.headers[DLQ_HEADERS.errorCode]}`);
    const all = [...thought, ...(await scrape(ports.action)), ...(await scrape(ports.observation))];
    assert.deepEqual(sorted(totals(all, 'tao_dead_letters_total', ['topic', 'reason'])), sorted(logLetters));

    // The three rates, from their definitions over the log.
    const ended = [...outcomes, ...told].filter((o) => o.status !== 'awaiting_input');
    const completed = ended.filter((o) => o.status === 'completed');
    const verdictsOf = new Map<string, ObservationResult[]>();
    for (const o of observations) verdictsOf.set(o.thought_id, [...(verdictsOf.get(o.thought_id) ?? []), o]);
    const hitFailure = ended.filter((o) => (verdictsOf.get(o.thought_id) ?? []).some((obs) => waveFailures(obs.verdicts) > 0));
    const humanInvolved = (id: string) => (verdictsOf.get(id) ?? []).some((obs) => obs.run.human_involved);
    const recovered = hitFailure.filter((o) => o.status === 'completed' && !humanInvolved(o.thought_id));
    const steps = actionResults.flatMap((r) => r.results);
    const complete = steps.filter((s) => evidenceComplete(s));
    assert.ok(
      hitFailure.length > 0 && recovered.length > 0 && recovered.length < hitFailure.length,
      `the faults give a self-recovery rate strictly between 0 and 1 (${recovered.length}/${hitFailure.length})`,
    );

    // Per run first, so a mismatch names the runs: Thought's `run ended` line against the log.
    const logLines = fleet.lines
      .map((l) => l.slice(l.indexOf(': ') + 2))
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const endLines = logLines.filter(
      (l) =>
        l.stage === 'thought' &&
        (l.msg === 'run ended' || l.msg === 'run awaiting input') &&
        (ours.has(String(l.thought_id)) || l.thought_id === 'garbage-tool'),
    );
    const hit = new Set(hitFailure.map((o) => o.thought_id));
    const disagree = endLines.filter((l) => l.msg === 'run ended' && Number(l.failures_seen) > 0 !== hit.has(String(l.thought_id)));
    assert.deepEqual(
      disagree.map((l) => ({
        run: l.thought_id,
        failures_seen: l.failures_seen,
        verdicts: (verdictsOf.get(String(l.thought_id)) ?? []).map((o) =>
          o.verdicts.map((v) => [o.iteration, v.step_id, v.valid, v.attempts, v.fallback_from]),
        ),
      })),
      [],
      'a run hit a failure per Thought iff its verdicts say so',
    );

    const gauge = (m: Sample[], name: string) => samples(m, name)[0]?.value;
    assert.equal(gauge(thought, 'tao_task_completion_rate'), completed.length / ended.length, 'TCR = completed / ended');
    assert.equal(gauge(thought, 'tao_self_recovery_rate'), recovered.length / hitFailure.length, 'SRR = recovered without a person / hit a failure');
    assert.deepEqual(
      sorted(totals(thought, 'tao_runs_with_failure_total', ['recovered'])),
      sorted(
        new Map(
          [
            ['true', recovered.length],
            ['false', hitFailure.length - recovered.length],
          ].filter(([, n]) => (n as number) > 0) as Array<[string, number]>,
        ),
      ),
    );
    const observation = await eventually(async () => {
      const m = await scrape(ports.observation);
      assert.equal([...totals(m, 'tao_steps_observed_total', []).values()][0], steps.length, 'every step of action.results is counted once');
      return m;
    }, 30000);
    assert.equal(gauge(observation, 'tao_traceability_index'), complete.length / steps.length, 'TI = steps with complete evidence / all steps');
    t.diagnostic(
      `outcomes ${JSON.stringify(Object.fromEntries(logOutcomes))}; TCR ${completed.length}/${ended.length}, SRR ${recovered.length}/${hitFailure.length}, TI ${complete.length}/${steps.length}; dead letters ${JSON.stringify(Object.fromEntries(logLetters))}`,
    );
    assert.equal(totals(observation, 'tao_steps_observed_total', ['complete']).get('true'), complete.length);

    // Consumer lag and runs in flight settle to zero once the load is done.
    await eventually(async () => {
      const m = [...(await scrape(ports.thought)), ...(await scrape(ports.action)), ...(await scrape(ports.observation))];
      const lag = samples(m, 'tao_consumer_lag');
      assert.deepEqual(
        [...new Set(lag.map((s) => s.labels.group))].sort(),
        ['action', 'observation', 'thought'].map((s) => `${cluster.namespace}.tao-${s}`),
      );
      assert.deepEqual(
        lag.filter((s) => s.value !== 0).map((s) => `${s.labels.topic}[${s.labels.partition}]=${s.value}`),
        [],
        'no lag left',
      );
      assert.equal(gauge(m, 'tao_runs_in_flight'), 0);
    }, 30000);
    // The broker-side figure too: each batch's commit covers its trailing transaction markers.
    await eventually(async () => {
      const settled = cli(['status', '--json'], cliEnv);
      assert.equal(await settled.exited, 0, settled.stderr.join('\n'));
      const rows = (JSON.parse(settled.lines.join('\n')) as StatusReport).lag;
      assert.deepEqual(
        rows.filter((r) => r.lag !== 0).map((r) => `${r.topic}[${r.partition}] committed ${r.committed} end ${r.end}`),
        [],
        'tao status shows no lag left',
      );
    }, 30000);

    // One trace per run, on every record of every topic (thought.runs included) and on its tool calls.
    const runsRaw = (await readRaw([cluster.codec.topics.name('thoughtRuns')])).filter((r) => ours.has(r.key));
    const traced: Array<{ where: string; key: string; traceparent: string | undefined }> = [
      ...records
        .filter((r: LoopRecord) => ours.has(r.key))
        .map((r) => ({ where: `${r.topic}@${r.partition}/${r.offset}`, key: r.key, traceparent: r.headers.traceparent })),
      ...runsRaw.map((r) => ({ where: r.topic, key: r.key, traceparent: r.headers.traceparent })),
      ...tools.stats().requests.map((r) => ({
        where: `tool call ${r.path}`,
        key: (r.headers['idempotency-key'] ?? '').split(':')[0]!,
        traceparent: r.headers.traceparent ?? undefined,
      })),
    ];
    const traceOf = new Map<string, string>();
    for (const t of traced) {
      const id = traceId(t.traceparent);
      assert.ok(id, `${t.where} of ${t.key} carries a W3C traceparent (${t.traceparent})`);
      if (!traceOf.has(t.key)) traceOf.set(t.key, id);
      assert.equal(id, traceOf.get(t.key), `${t.where} of ${t.key} is in its run's trace`);
    }
    assert.equal(traceOf.size, RUNS);
    assert.equal(new Set(traceOf.values()).size, RUNS, 'each run has its own trace');
    assert.ok(runsRaw.length >= RUNS * 2, 'thought.runs records were checked too');

    // Logs: a line per executed step and per decision lets an operator follow any run; no secret leaks.
    const stepLines = new Set(logLines.filter((l) => l.msg === 'step executed').map((l) => `${l.thought_id}:${l.iteration}:${l.step}`));
    for (const r of actionResults)
      for (const s of r.results) assert.ok(stepLines.has(`${r.thought_id}:${r.iteration}:${s.step_id}`), `step ${s.idempotency_key} has its log line`);
    assert.deepEqual(sorted(countBy(endLines, (l) => `${l.status}|${l.reason_code}`)), sorted(logOutcomes));
    assert.ok(!fleet.lines.some((l) => l.includes(SECRET.slice('Bearer '.length))), 'the token in a task text is never logged');

    // tail: a line per step and a summary that counts what the log holds.
    tail.child.kill('SIGINT');
    assert.equal(await tail.exited, 0, tail.stderr.join('\n'));
    const stepLine = new RegExp(`^\\[${watched}\\]   S1 crm\\.find_customer -> `);
    assert.ok(
      tail.lines.some((l) => stepLine.test(l)),
      'tail printed the step lines of a run',
    );
    const summaries = tail.lines.filter((l) => l.startsWith('-- '));
    assert.ok(summaries.length >= 3, `tail printed progress summaries:\n${summaries.join('\n')}`);
    const last = summaries[summaries.length - 1]!;
    t.diagnostic(`tail: ${tail.lines.length} lines, last summary: ${last}`);
    const e = (s: string) => statuses.get(s) ?? 0;
    assert.match(
      last,
      new RegExp(
        `runs started ${RUNS}, completed ${e('completed')}, failed ${e('failed')}, escalated ${e('escalated')}, awaiting input ${e('awaiting_input')}, awaiting approval ${e('awaiting_approval')}, budget exhausted ${e('budget_exhausted')}, expired ${e('expired')}`,
      ),
    );
    assert.match(last, new RegExp(`steps ${steps.length} \\(`));
    assert.ok(
      tail.lines.some((l) => /skipped an undecodable record/.test(l)),
      'tail reports records it cannot decode instead of dying',
    );
    tailOne.child.kill('SIGINT');
    assert.equal(await tailOne.exited, 0, tailOne.stderr.join('\n'));
    const oneRun = tailOne.lines.filter((l) => !l.startsWith('tailing ') && !l.startsWith('-- '));
    assert.ok(
      oneRun.some((l) => stepLine.test(l)) && oneRun.every((l) => l.startsWith(`[${watched}]`)),
      `tail --thought shows that run only:\n${oneRun.join('\n')}`,
    );
    assert.match(tailOne.lines[tailOne.lines.length - 1]!, /runs started 1, /);

    // status once everything settled: the text view, with exact dead-letter counts and nothing in flight.
    const settled = cli(['status'], cliEnv);
    assert.equal(await settled.exited, 0, settled.stderr.join('\n'));
    const text = settled.lines.join('\n');
    for (const stage of ['thought', 'action', 'observation'])
      assert.match(text, new RegExp(`^  ${cluster.namespace}\\.tao-${stage} +Stable +1 +${cluster.namespace}\\.`, 'm'));
    assert.match(text, /in flight 0 {3}awaiting input \d+ {3}awaiting approval \d+ {3}ended \d+/);
    for (const topic of dlqTopics) {
      const n = letters.filter((l) => l.topic === topic).length;
      assert.match(text, new RegExp(`^  ${topic.replace(/\./g, '\\.')} +${n}\\b`, 'm'), `status shows ${n} dead letters in ${topic}`);
    }
    assert.match(text, /crm\.tier (closed|open|half_open)/);
    assert.match(text, /http:\/\/127\.0\.0\.1:1 {2}unreachable/);
  },
);

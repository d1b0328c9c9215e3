/**
 * Test harness for integration tests: a fresh namespace (its own topics, subjects and consumer
 * groups) on the real broker and registry named by KAFKA_BROKERS / SCHEMA_REGISTRY_URL (started by
 * `npm test` through infra/ when unset), stage processes, and read_committed scans of the log.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { applyCatalog } from '../../runtime/apply-catalog.ts';
import { spawnStage, stopAll, type StageProcess } from '../../cli/processes.ts';
import { submitTasks } from '../../client/tasks.ts';
import { decodeLoopRecord, watchRecords, type LoopRecord } from '../../client/watch.ts';
import { AvroCodec } from '../../runtime/codec.ts';
import { loadRuntimeConfig, type RuntimeConfig } from '../../runtime/config.ts';
import { createKafka } from '../../runtime/kafka.ts';
import { followFromBeginning } from '../../runtime/follow.ts';
import { createLogger } from '../../runtime/log.ts';
import type { Outcome, Task } from '../../schemas/types.gen.ts';
import type { TopicId } from '../../topics/catalog.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';

export interface TestCluster {
  namespace: string;
  env: NodeJS.ProcessEnv;
  config: RuntimeConfig;
  kafka: Kafka;
  codec: AvroCodec;
}

/** `promise`, or a rejection with `message()` once `timeoutMs` have passed first. */
async function within<T>(promise: Promise<T>, timeoutMs: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message())), timeoutMs)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A fresh namespace with every catalog topic created and every schema registered. */
export async function freshCluster(extraEnv: NodeJS.ProcessEnv = {}): Promise<TestCluster> {
  const namespace = `t${randomUUID().slice(0, 8)}`;
  // The tests' tasks follow the graph planner's default flow (order-status@1); tests of another planner set TAO_PLANNER.
  const env: NodeJS.ProcessEnv = { ...process.env, TAO_NAMESPACE: namespace, TAO_SESSION_TIMEOUT_MS: '6000', TAO_PLANNER: 'graph', ...extraEnv };
  await applyCatalog(env, () => undefined);
  const config = loadRuntimeConfig(env);
  const kafka = createKafka(config, `test-${namespace}`, createLogger({ test: namespace }, { level: 'error' }));
  const codec = AvroCodec.create(config);
  await codec.register(['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']);
  return { namespace, env, config, kafka, codec };
}

/** Stage processes of one test; every line they print is kept for failure messages. */
export class StageFleet {
  readonly processes: StageProcess[] = [];
  readonly lines: string[] = [];
  private readonly lineWaiters = new Set<(line: string) => void>();

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  /** Starts `tao run <name>` and resolves once it has joined its group and got partitions (the scheduler: once it follows the log). */
  async start(name: 'thought' | 'action' | 'observation' | 'scheduler', timeoutMs = 60000): Promise<StageProcess & { opsPort: number }> {
    let ready!: () => void;
    let opsPort = 0;
    const started = new Promise<void>((r) => (ready = r));
    const proc = spawnStage(name, { ...this.env, TAO_OPS_PORT: '0' }, (who, line) => {
      this.lines.push(`${who}: ${line}`);
      for (const w of this.lineWaiters) w(`${who}: ${line}`);
      if (line.includes('"msg":"stage started"') || line.includes('"msg":"scheduler running"')) {
        opsPort = (JSON.parse(line) as { ops_port?: number }).ops_port ?? 0;
        ready();
      }
    });
    this.processes.push(proc);
    const exited = proc.exited.then((code) => {
      throw new Error(`${name} exited (${code}) before it started:\n${this.lines.slice(-20).join('\n')}`);
    });
    await within(Promise.race([started, exited]), timeoutMs, () => `${name} did not start within ${timeoutMs} ms`);
    exited.catch(() => undefined);
    return { ...proc, opsPort };
  }

  async stop(): Promise<void> {
    await stopAll(this.processes);
  }

  /** Resolves with the first line (`<stage>: <line>`) a stage printed, or prints, that contains `text`. */
  async waitForLine(text: string, timeoutMs: number): Promise<string> {
    const seen = this.lines.find((l) => l.includes(text));
    if (seen) return seen;
    let check!: (line: string) => void;
    const found = new Promise<string>((resolve) => (check = (line) => void (line.includes(text) && resolve(line))));
    this.lineWaiters.add(check);
    try {
      return await within(found, timeoutMs, () => `no stage printed "${text}" within ${timeoutMs} ms`);
    } finally {
      this.lineWaiters.delete(check);
    }
  }

  /**
   * `promise`, or its rejection with what a failed wait needs to be understood from CI output: the
   * stages' last warnings and errors (their last lines when there are none), and with `cluster`, how
   * many committed records each loop topic holds (where the runs stand).
   */
  async explained<T>(promise: Promise<T>, cluster?: TestCluster): Promise<T> {
    try {
      return await promise;
    } catch (err) {
      const problems = warningsAndErrors(this.lines, 30);
      const last = problems.length > 0 ? '' : `\nthe stages' last lines:\n${this.lines.slice(-30).join('\n')}`;
      const counts = cluster
        ? `\ncommitted records, read after the wait failed: ${await committedCounts(cluster).catch((e: Error) => `not read (${e.message})`)}`
        : '';
      throw new Error(`${(err as Error).message}${counts}\nthe stages' last ${problems.length} warnings and errors:\n${problems.join('\n')}${last}`);
    }
  }
}

/** The last `n` of `lines` (JSON log lines, perhaps prefixed) at level warn or error. */
export function warningsAndErrors(lines: readonly string[], n: number): string[] {
  return lines.filter((l) => /"level":"(warn|error)"/.test(l)).slice(-n);
}

/** "tasks 120, thoughtRequests 240, ...": the committed records of each loop topic, for failure messages. */
async function committedCounts(cluster: TestCluster): Promise<string> {
  const topics: TopicId[] = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'];
  const records = await scanToEnd(cluster, topics, 20000);
  return topics.map((t) => `${t} ${records.filter((r) => r.topic === t).length}`).join(', ');
}

/**
 * Reads every committed record of `topics` from the beginning (read_committed). Resolves once
 * `until(records)` holds, or when nothing new arrived for `idleMs` after it started reading.
 */
export async function scan(
  cluster: TestCluster,
  topics: TopicId[],
  options: { idleMs?: number; timeoutMs?: number; until?: (records: LoopRecord[]) => boolean } = {},
): Promise<LoopRecord[]> {
  const records: LoopRecord[] = [];
  const idleMs = options.idleMs ?? 3000;
  let last = Date.now();
  const watcher = await watchRecords(cluster.kafka, cluster.codec, {
    topics,
    from: 'beginning',
    onRecord: (r) => {
      records.push(r);
      last = Date.now();
    },
  });
  const deadline = Date.now() + (options.timeoutMs ?? 60000);
  try {
    while (Date.now() < deadline) {
      if (options.until ? options.until(records) : Date.now() - last > idleMs) return records;
      await new Promise((r) => setTimeout(r, 100));
    }
    if (options.until) throw new Error(`scan of ${topics.join(', ')} timed out with ${records.length} records`);
    return records;
  } finally {
    await watcher.stop();
  }
}

/**
 * Every committed record of `topics` up to the end each partition had when the call began: the
 * log as it stands, read to its end (a read_committed reader also waits out a transaction still
 * open there). For "nothing more was written" after a write that was acknowledged before the
 * call, instead of waiting for a silence.
 */
export async function scanToEnd(cluster: TestCluster, topics: TopicId[], timeoutMs = 60000): Promise<LoopRecord[]> {
  const records: LoopRecord[] = [];
  const ids = new Map(topics.map((id) => [cluster.codec.topics.name(id), id]));
  const follower = await followFromBeginning(cluster.kafka, [...ids.keys()], {
    groupPrefix: `${cluster.namespace}-scan`,
    onMessage: async (topic, partition, message) => {
      records.push(await decodeLoopRecord(cluster.codec, ids.get(topic)!, partition, message));
    },
  });
  try {
    await within(
      follower.reachedEnd,
      timeoutMs,
      () => `scan of ${topics.join(', ')} did not reach the end within ${timeoutMs} ms (${records.length} records read)`,
    );
    return records;
  } finally {
    await follower.stop();
  }
}

/** Follows `tao.outcomes` from the beginning; `waitFor(n)` resolves once n distinct runs have an outcome. */
export async function followOutcomes(cluster: TestCluster): Promise<{
  outcomes: Map<string, LoopRecord>;
  waitFor(n: number, timeoutMs: number): Promise<void>;
  waitUntil(check: (outcomes: Map<string, LoopRecord>) => boolean, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}> {
  const outcomes = new Map<string, LoopRecord>();
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const checks: Array<{ check: (o: Map<string, LoopRecord>) => boolean; resolve: () => void }> = [];
  const watcher = await watchRecords(cluster.kafka, cluster.codec, {
    topics: ['outcomes'],
    from: 'beginning',
    onRecord: (r) => {
      outcomes.set(r.key, r);
      for (const w of waiters) if (outcomes.size >= w.n) w.resolve();
      for (const c of checks) if (c.check(outcomes)) c.resolve();
    },
  });
  return {
    outcomes,
    stop: () => watcher.stop(),
    waitUntil: (check, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        if (check(outcomes)) return resolve();
        const timer = setTimeout(
          () => reject(new Error(`outcomes did not reach the expected state within ${timeoutMs} ms (${outcomes.size} seen)`)),
          timeoutMs,
        );
        checks.push({ check, resolve: () => (clearTimeout(timer), resolve()) });
      }),
    waitFor: (n, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        if (outcomes.size >= n) return resolve();
        const timer = setTimeout(() => reject(new Error(`only ${outcomes.size} of ${n} outcomes after ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      }),
  };
}

/** The whole loop for one test file: a fresh namespace, the demo tool server, and the three stages as processes. */
export interface RunningLoop {
  cluster: TestCluster;
  tools: ToolServer;
  fleet: StageFleet;
  stop(): Promise<void>;
}

export async function startLoop(extraEnv: NodeJS.ProcessEnv = {}): Promise<RunningLoop> {
  const tools = await startToolServer({ port: 0 });
  const cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url, ...extraEnv });
  const fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  return {
    cluster,
    tools,
    fleet,
    stop: async () => {
      await fleet.stop();
      await tools.close();
    },
  };
}

/**
 * Submits `tasks` to a running loop and resolves with each one's committed outcome, by thought id,
 * once every one has one (read_committed); rejects after `timeoutMs`.
 */
export async function runTasks(cluster: TestCluster, tasks: Task[], timeoutMs: number): Promise<Map<string, Outcome>> {
  const follower = await followOutcomes(cluster);
  try {
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, tasks);
    await producer.disconnect();
    const ids = new Set(tasks.map((t) => t.thought_id));
    await follower.waitUntil((o) => [...ids].every((id) => o.has(id)), timeoutMs);
    return new Map([...ids].map((id) => [id, follower.outcomes.get(id)!.value as unknown as Outcome]));
  } finally {
    await follower.stop();
  }
}

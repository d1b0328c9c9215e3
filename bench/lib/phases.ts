/**
 * The measured phases of `npm run bench`: the TAO loop (real stage processes) and the relay
 * ceiling, each in a fresh namespace, warmed up, then driven by a closed loop of a fixed number of
 * runs. Each phase returns the figures of one row of the report.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
export { deleteNamespace } from '../../eval/namespace.ts';
import { STAGES } from '../../processors/wiring/index.ts';
import { topicNames, type TopicId } from '../../topics/catalog.ts';
import {
  Fleet,
  freshNamespace,
  getJson,
  progress,
  sleep,
  stageSpec,
  waitBalanced,
  type Instance,
  type ModelSimProcess,
  type ProcessSpec,
  type ToolServerProcess,
} from './harness.ts';
import {
  closedLoop,
  connectProducer,
  hopLatencies,
  iterationLatencies,
  loopTarget,
  readLog,
  type LoadResult,
  type LoadTarget,
  type RunTimeline,
} from './load.ts';
import { deleteNamespace } from '../../eval/namespace.ts';
import { decodeLoopRecords, loopTimelines, loopTopicNames, recordSizes, type DecodedRecord } from './loop-log.ts';
import { bucketDelta, bucketSum, counterValue, gauge, histogramBuckets, histogramQuantile, parsePrometheus, summary, type Sample } from './stats.ts';
import { RELAY_HOPS, HOP_INPUTS, createRelayTopics, relayHopSpec, relayTarget, relayTimelines, relayTopics, type RelaySizes } from '../relay/relay.ts';
import { setting } from '../../runtime/config.ts';
import type { ActionResult } from '../../schemas/types.gen.ts';
import { MODEL_TOOL } from '../../tools/model.ts';

/** Run counts and concurrency of a phase. */
export interface PhaseLoad {
  warmupRuns: number;
  /** Runs of the throughput measurement. */
  runs: number;
  /** Runs kept in flight during it: enough to saturate the machine. */
  concurrency: number;
  /** Runs of the latency probe that follows, with `probeConcurrency` in flight (a lightly loaded loop). */
  probeRuns: number;
  probeConcurrency: number;
  timeoutMs: number;
}

type Percentiles = { n: number; p50: number; p95: number; p99: number; max: number };

/** One row of the report. */
export interface PhaseResult {
  label: string;
  kind: 'loop' | 'relay';
  /** Added latency of every tool call (ms); null for the relay, which calls nothing. */
  toolLatencyMs: number | null;
  /**
   * ReAct phases only (TAO_PLANNER=react against the model simulator; null otherwise): the
   * simulator's latency per answer (ms), model turns (committed `model.chat` steps) per completed
   * run, and model turns per second at the steady-state run rate.
   */
  model: null | { latencyMs: number; turnsPerRun: number; turnsPerSecond: number };
  instancesPerStage: number;
  /** Action instances when they differ from `instancesPerStage` (the scaling phases); null otherwise. */
  actionInstances?: number | null;
  /** Action's TAO_ACTION_CONCURRENCY in the phase (waves in flight per Action instance). */
  actionConcurrency?: number;
  /** Code under test: `current`, or the name of the patch applied. */
  code: string;
  runs: number;
  concurrency: number;
  /** Wall time of the throughput measurement, ramp-up and drain included. */
  seconds: number;
  /** Steady-state rate: runs ended between the 10th and the 90th percentile of end times, per second. */
  runsPerSecond: number;
  /** Iterations (waves) per second at that rate. */
  iterationsPerSecond: number;
  /** Iteration latency (ms) under saturation: wave request → Thought's next record (queueing included). */
  iterationMs: Percentiles;
  /** Run latency (ms) under saturation: task record → outcome record. */
  runMs: Percentiles;
  /** The same two latencies with only `probeConcurrency` runs in flight, and the iteration split by hop ({@link hopLatencies}). */
  probe: { concurrency: number; iterationMs: Percentiles; runMs: Percentiles; hopMs: { action: Percentiles; observation: Percentiles; thought: Percentiles } };
  /** Per stage (or hop): P99 of tao_record_handle_seconds over the measured runs (ms), and peak RSS per process (MiB). */
  stages: Record<
    string,
    { handleP99Ms: number | null; handleP50Ms: number | null; rssMiB: number[]; recordsPerTransaction: number | null; cpuMsPerRun: number }
  >;
  /**
   * CPU ms per run, over the same window as the stages' figure, of the other processes on this
   * machine: the local Kafka broker(s) (null when KAFKA_BROKERS names a broker elsewhere), the demo
   * tool server (null in relay phases, which call no tool), and this bench process (load driver and
   * log reader). With the stages' figures, where the machine's cores went.
   */
  otherCpuMsPerRun?: OtherCpu;
  /** Outcome statuses of the measured runs. */
  statuses: Record<string, number>;
  /** The machine's 1-minute load average at the end of the measurement (other work on the machine shows here). */
  loadAverage: number;
}

interface PhaseSetup {
  label: string;
  load: PhaseLoad;
  instances: number;
  started: number;
}

/** The demo data's orders (docs/DEMO-DOMAIN.md) the ReAct phases ask about: delivered and shipped take 3 model turns, placed 2. */
export const REACT_ORDERS = ['O-12345678', 'O-20250002', 'O-20250003'] as const;

/**
 * The loop with real stage processes (`tao run thought|action|observation`, `instances` of each),
 * every tool call slowed to `toolLatencyMs` by the tool server's `slow_body` fault. `bin` runs
 * another checkout's `bin/tao.js` (the A/B of a patch). With `model`, the stages run the ReAct
 * planner (TAO_PLANNER=react) against that model simulator and the tasks are "Where is my order
 * <id>?" over {@link REACT_ORDERS}; without, the graph planner's order-status flow. Also returns
 * the loop's record sizes for the relay.
 */
export async function loopPhase(
  setup: PhaseSetup & {
    actionInstances?: number;
    toolLatencyMs: number;
    tools: ToolServerProcess;
    baseEnv: NodeJS.ProcessEnv;
    bin?: string;
    code?: string;
    extraEnv?: NodeJS.ProcessEnv;
    nodeArgs?: (stage: string) => string[];
    model?: ModelSimProcess;
  },
): Promise<{ result: PhaseResult; sizes: RelaySizes; records: DecodedRecord[] }> {
  const { label, load, instances, started, tools, model } = setup;
  const react: NodeJS.ProcessEnv = model ? { TAO_PLANNER: 'react', TAO_LLM_BASE_URL: model.url, TAO_LLM_MODEL: 'sim-1' } : {};
  const ns = await freshNamespace('bench', setup.baseEnv, { TAO_DEMO_TOOL_ORIGIN: tools.url, ...react, ...setup.extraEnv });
  const fleet = new Fleet();
  try {
    const perStage = (stage: string) => (stage === 'action' ? (setup.actionInstances ?? instances) : instances);
    progress(started, `${label}: starting ${STAGES.map((s) => `${perStage(s)} ${s}`).join(', ')} in ${ns.namespace}`);
    await startStages(fleet, ns.env, perStage, setup.bin, setup.nodeArgs);
    await tools.setFaults(setup.toolLatencyMs > 0 ? [{ route: '*', mode: 'slow_body', delayMs: setup.toolLatencyMs }] : []);
    const producer = await connectProducer(ns.kafka);
    try {
      const target = model ? loopTarget(ns, producer, (i) => `Where is my order ${REACT_ORDERS[i % REACT_ORDERS.length]}?`) : loopTarget(ns, producer);
      const measured = await measure(label, started, fleet, target, load, tools);
      progress(started, `${label}: reading the log`);
      const records = await decodeLoopRecords(
        ns,
        await readLog(ns.kafka, loopTopicNames(ns), { until: untilOutcomes(ns.codec.topics.name('outcomes'), load.warmupRuns + load.runs + load.probeRuns) }),
      );
      progress(started, `${label}: ${records.length} records read`);
      const result = row(setup, 'loop', setup.toolLatencyMs, setup.code ?? 'current', measured, loopTimelines(records), fleet);
      result.actionInstances = setup.actionInstances ?? null;
      result.actionConcurrency = setting(ns.env, 'TAO_ACTION_CONCURRENCY');
      if (model) result.model = modelFigures(model.latencyMs, measured.saturated, records, result.runsPerSecond);
      return { result, sizes: recordSizes(records), records };
    } finally {
      await producer.disconnect();
    }
  } finally {
    progress(started, `${label}: stopping`);
    await fleet.stop();
    progress(started, `${label}: deleting ${ns.namespace}`);
    await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns.namespace}.`));
    progress(started, `${label}: done`);
  }
}

/** The relay ceiling with `instances` processes per hop and the loop's record sizes. */
export async function relayPhase(setup: PhaseSetup & { sizes: RelaySizes; baseEnv: NodeJS.ProcessEnv }): Promise<PhaseResult> {
  const { label, load, instances, started, sizes } = setup;
  const ns = await freshNamespace('relay', setup.baseEnv);
  const admin = ns.kafka.admin();
  await admin.connect();
  try {
    await createRelayTopics(admin, ns.namespace, 6);
  } finally {
    await admin.disconnect();
  }
  const topics = relayTopics(ns.namespace);
  const fleet = new Fleet();
  try {
    progress(started, `${label}: starting ${instances} process(es) per relay hop in ${ns.namespace}`);
    await startSet(
      fleet,
      RELAY_HOPS.map((hop) => ({ spec: relayHopSpec(hop, ns.env, sizes), inputs: HOP_INPUTS[hop].inputs.map((i) => topics[i]) })),
      instances,
    );
    const producer = await connectProducer(ns.kafka);
    try {
      const measured = await measure(label, started, fleet, relayTarget(ns.kafka, producer, ns.namespace, sizes), load);
      const records = await readLog(ns.kafka, [topics.tasks, topics.requests, topics.results, topics.observations, topics.outcomes], {
        until: untilOutcomes(topics.outcomes, load.warmupRuns + load.runs + load.probeRuns),
      });
      return row(setup, 'relay', null, 'relay', measured, relayTimelines(records, ns.namespace), fleet);
    } finally {
      await producer.disconnect();
    }
  } finally {
    await fleet.stop();
    await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns.namespace}.`));
  }
}

/** The topics each stage consumes (see each processors/<stage>/stage.ts). */
export const STAGE_INPUTS: Record<(typeof STAGES)[number], TopicId[]> = {
  thought: ['tasks', 'observationResults'],
  action: ['thoughtRequests'],
  observation: ['actionResults'],
};

/**
 * Starts `instances` of each stage (a number for all, or one per stage name; stages in parallel,
 * instances of a stage one after another) and waits for settled groups.
 */
export async function startStages(
  fleet: Fleet,
  env: NodeJS.ProcessEnv,
  instances: number | ((stage: string) => number),
  bin?: string,
  nodeArgs?: (stage: string) => string[],
): Promise<void> {
  const topics = topicNames(setting(env, 'TAO_NAMESPACE'));
  await startSet(
    fleet,
    STAGES.map((s) => ({ spec: stageSpec(s, env, bin, nodeArgs?.(s)), inputs: STAGE_INPUTS[s].map((id) => topics.name(id)) })),
    instances,
  );
}

async function startSet(fleet: Fleet, set: Array<{ spec: ProcessSpec; inputs: string[] }>, instances: number | ((name: string) => number)): Promise<void> {
  const count = typeof instances === 'number' ? () => instances : instances;
  await Promise.all(
    set.map(async ({ spec }) => {
      for (let i = 0; i < count(spec.name); i++) await fleet.start(spec);
    }),
  );
  for (const { spec, inputs } of set) await waitBalanced(fleet, spec.name, inputs, 6);
}

interface Measured {
  saturated: LoadResult;
  probe: LoadResult;
  before: Map<Instance, Sample[]>;
  after: Map<Instance, Sample[]>;
  rssMax: Map<Instance, number>;
  others: OtherCpu;
  loadAverage: number;
}

/**
 * Warm-up, the throughput measurement (scrapes of every process before and after, RSS sampled
 * every second), then the latency probe.
 */
async function measure(
  label: string,
  started: number,
  fleet: Fleet,
  target: LoadTarget,
  load: PhaseLoad,
  tools: ToolServerProcess | null = null,
): Promise<Measured> {
  progress(started, `${label}: warm-up, ${load.warmupRuns} runs`);
  await closedLoop(target, { runs: load.warmupRuns, concurrency: load.concurrency, timeoutMs: load.timeoutMs });
  const othersBefore = otherCpu(tools);
  const before = await scrapeAll(fleet);
  const rssMax = new Map<Instance, number>();
  // Read from /proc, not /metrics: a scrape a second cost each stage 3-5% of its CPU (bench/profile.ts).
  const sampler = setInterval(() => {
    for (const i of fleet.alive()) rssMax.set(i, Math.max(rssMax.get(i) ?? 0, residentBytes(i)));
  }, 1000);
  progress(started, `${label}: measuring ${load.runs} runs, ${load.concurrency} in flight`);
  let saturated: LoadResult;
  let after: Map<Instance, Sample[]>;
  let others: OtherCpu;
  let loadAverage = Number.NaN;
  try {
    saturated = await closedLoop(target, { ...load, onProgress: (done) => progress(started, `${label}: ${done}/${load.runs} runs ended`) });
    after = await scrapeAll(fleet);
    others = otherCpuDelta(othersBefore, otherCpu(tools));
    loadAverage = loadavg()[0]!;
    for (const [i, samples] of after) rssMax.set(i, Math.max(rssMax.get(i) ?? 0, gauge(samples, 'process_resident_memory_bytes')));
  } finally {
    clearInterval(sampler);
  }
  progress(started, `${label}: latency probe, ${load.probeRuns} runs, ${load.probeConcurrency} in flight`);
  const probe = await closedLoop(target, { runs: load.probeRuns, concurrency: load.probeConcurrency, timeoutMs: load.timeoutMs });
  return { saturated, probe, before, after, rssMax, others, loadAverage };
}

/** CPU ms (so far, over a window, or per run) of the local broker processes (null when none runs here), the tool server (null without one) and this process. */
type OtherCpu = { broker: number | null; tools: number | null; driver: number };

/** {@link OtherCpu} so far. */
function otherCpu(tools: ToolServerProcess | null): OtherCpu {
  let broker: number | null = null;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('kafka.Kafka')) continue;
      broker = (broker ?? 0) + processCpuMs(Number(entry));
    } catch {
      // a process that exited while the directory was read
    }
  }
  const pid = tools?.instance.child.pid;
  const usage = process.cpuUsage();
  return { broker, tools: pid === undefined ? null : processCpuMs(pid), driver: (usage.user + usage.system) / 1000 };
}

function otherCpuDelta(a: OtherCpu, b: OtherCpu): OtherCpu {
  const d = (x: number | null, y: number | null) => (x === null || y === null ? null : y - x);
  return { broker: d(a.broker, b.broker), tools: d(a.tools, b.tools), driver: b.driver - a.driver };
}

/** utime + stime of a process from /proc/<pid>/stat, in ms (USER_HZ is 100 on Linux). */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The process's resident set size now (VmRSS), 0 when it cannot be read. */
function residentBytes(instance: Instance): number {
  try {
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${instance.child.pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? 0 : Number(kib) * 1024;
  } catch {
    return 0; // the process has exited: its last sample stands
  }
}

async function scrapeAll(fleet: Fleet): Promise<Map<Instance, Sample[]>> {
  const out = new Map<Instance, Sample[]>();
  await Promise.all(
    fleet
      .alive()
      .filter((i) => i.opsPort > 0)
      .map(async (i) => {
        try {
          const res = await fetch(`http://127.0.0.1:${i.opsPort}/metrics`, { signal: AbortSignal.timeout(3000) });
          out.set(i, parsePrometheus(await res.text()));
        } catch {
          // a process too busy to answer within 3 s is left out of this sample
        }
      }),
  );
  return out;
}

function row(
  setup: PhaseSetup,
  kind: 'loop' | 'relay',
  toolLatencyMs: number | null,
  code: string,
  m: Measured,
  all: Map<string, RunTimeline>,
  fleet: Fleet,
): PhaseResult {
  const of = (ids: string[]) => ids.map((id) => all.get(id)).filter((t): t is RunTimeline => t !== undefined);
  const timelines = of(m.saturated.ids);
  const iterations = iterationLatencies(timelines);
  const runMs = timelines.filter((t) => t.endedAt !== null).map((t) => t.endedAt! - t.startedAt);
  const probeTimelines = of(m.probe.ids);
  const hops = hopLatencies(probeTimelines);
  const runs = m.saturated.ids.length;
  const perRun = (ms: number | null) => (ms === null ? null : ms / runs);
  const ends = [...m.saturated.endedAt.values()].sort((a, b) => a - b);
  const [from, to] = [ends[Math.floor(0.1 * (ends.length - 1))]!, ends[Math.floor(0.9 * (ends.length - 1))]!];
  const runsPerSecond =
    to > from ? (ends.filter((t) => t > from && t <= to).length / (to - from)) * 1000 : runs / ((m.saturated.endMs - m.saturated.startMs) / 1000);
  const stages: PhaseResult['stages'] = {};
  const names = [...new Set(fleet.instances.filter((i) => i.opsPort > 0).map((i) => i.name))];
  for (const name of names) {
    const instances = fleet.instances.filter((i) => i.name === name);
    const deltas = instances.map((i) =>
      bucketDelta(histogramBuckets(m.after.get(i) ?? [], 'tao_record_handle_seconds'), histogramBuckets(m.before.get(i) ?? [], 'tao_record_handle_seconds')),
    );
    const buckets = bucketSum(deltas);
    const has = (buckets.get(Number.POSITIVE_INFINITY) ?? 0) > 0;
    const counter = (metric: string, labels: Record<string, string>) =>
      instances.reduce((sum, i) => sum + counterValue(m.after.get(i) ?? [], metric, labels) - counterValue(m.before.get(i) ?? [], metric, labels), 0);
    const txns = counter('tao_transactions_total', { result: 'committed' });
    stages[name] = {
      recordsPerTransaction: txns > 0 ? counter('tao_records_in_total', {}) / txns : null,
      cpuMsPerRun: (1000 * counter('process_cpu_seconds_total', {})) / runs,
      handleP99Ms: has ? histogramQuantile(buckets, 0.99) * 1000 : null,
      handleP50Ms: has ? histogramQuantile(buckets, 0.5) * 1000 : null,
      rssMiB: instances.map((i) => Math.round((m.rssMax.get(i) ?? Number.NaN) / (1024 * 1024))),
    };
  }
  const statuses: Record<string, number> = {};
  for (const s of m.saturated.status.values()) statuses[s] = (statuses[s] ?? 0) + 1;
  return {
    label: setup.label,
    kind,
    toolLatencyMs,
    model: null,
    instancesPerStage: setup.instances,
    code,
    runs,
    concurrency: setup.load.concurrency,
    seconds: (m.saturated.endMs - m.saturated.startMs) / 1000,
    runsPerSecond,
    iterationsPerSecond: runsPerSecond * (iterations.length / Math.max(1, timelines.filter((t) => t.endedAt !== null).length)),
    iterationMs: summary(iterations),
    runMs: summary(runMs),
    probe: {
      concurrency: setup.load.probeConcurrency,
      iterationMs: summary(iterationLatencies(probeTimelines)),
      runMs: summary(probeTimelines.filter((t) => t.endedAt !== null).map((t) => t.endedAt! - t.startedAt)),
      hopMs: { action: summary(hops.action), observation: summary(hops.observation), thought: summary(hops.thought) },
    },
    stages,
    otherCpuMsPerRun: { broker: perRun(m.others.broker), tools: perRun(m.others.tools), driver: m.others.driver / runs },
    statuses,
    loadAverage: m.loadAverage,
  };
}

/**
 * Model turns of the measured runs: committed `model.chat` results (a fallback model's answer
 * counts as the turn it served) in action.results of the runs that ended, per run and, at the
 * phase's steady-state run rate, per second.
 */
function modelFigures(latencyMs: number, saturated: LoadResult, records: DecodedRecord[], runsPerSecond: number): NonNullable<PhaseResult['model']> {
  const ended = new Set(saturated.endedAt.keys());
  let turns = 0;
  for (const r of records) {
    if (r.id !== 'actionResults' || !r.decoded || !ended.has(r.key)) continue;
    for (const s of (r.decoded as unknown as ActionResult).results) if (s.tool === MODEL_TOOL || s.fallback_from === MODEL_TOOL) turns++;
  }
  const turnsPerRun = turns / Math.max(1, ended.size);
  return { latencyMs, turnsPerRun, turnsPerSecond: runsPerSecond * turnsPerRun };
}

/** What draining a backlog through one stage process cost. */
export interface DrainResult {
  label: string;
  code: string;
  stage: string;
  records: number;
  seconds: number;
  recordsPerSecond: number;
  /** CPU time of the stage process (user + system) while it drained the backlog. */
  cpuMs: number;
  cpuMsPerRecord: number;
  recordsPerTransaction: number;
}

/**
 * One stage alone on a backlog: starts `stage` from `bin`, writes `corpus` (values of the stage's
 * input topic) at once, and measures the process's CPU time and the wall time until every output
 * is committed. With the backlog in hand the stage runs full transactions, so CPU per record is
 * the stage's own cost with little of the machine's noise: the figure an A/B of a stage's code
 * compares.
 */
export async function drainPhase(setup: {
  label: string;
  started: number;
  baseEnv: NodeJS.ProcessEnv;
  tools: ToolServerProcess;
  bin: string;
  code: string;
  stage: 'observation';
  corpus: ReadonlyArray<Record<string, unknown> & { thought_id: string }>;
}): Promise<DrainResult> {
  const { label, started, stage, corpus } = setup;
  const ns = await freshNamespace('drain', setup.baseEnv, { TAO_DEMO_TOOL_ORIGIN: setup.tools.url });
  const fleet = new Fleet();
  const input = STAGE_INPUTS[stage][0]!;
  try {
    const topics = topicNames(ns.namespace);
    const instance = await fleet.start(stageSpec(stage, ns.env, setup.bin));
    await waitBalanced(
      fleet,
      stage,
      STAGE_INPUTS[stage].map((id) => topics.name(id)),
      6,
    );
    const scrape = async () => parsePrometheus(await (await fetch(`http://127.0.0.1:${instance.opsPort}/metrics`)).text());
    const before = await scrape();
    const producer = await connectProducer(ns.kafka);
    progress(started, `${label}: ${corpus.length} ${topics.name(input)} records into ${stage}`);
    const t0 = Date.now();
    try {
      for (let i = 0; i < corpus.length; i += 500) {
        const messages = [];
        for (const value of corpus.slice(i, i + 500)) messages.push({ key: value.thought_id, value: await ns.codec.encode(input, value) });
        await producer.send({ topic: topics.name(input), acks: -1, messages });
      }
    } finally {
      await producer.disconnect();
    }
    // Observation writes one record per input; records_out counts them once committed.
    const outCount = (samples: Sample[]) => counterValue(samples, 'tao_records_out_total', {});
    let after = await scrape();
    while (outCount(after) - outCount(before) < corpus.length) {
      if (Date.now() - t0 > 180000) throw new Error(`${label}: ${outCount(after) - outCount(before)} of ${corpus.length} records committed after 180 s`);
      await sleep(25);
      after = await scrape();
    }
    const seconds = (Date.now() - t0) / 1000;
    const cpuMs = 1000 * (counterValue(after, 'process_cpu_seconds_total') - counterValue(before, 'process_cpu_seconds_total'));
    const txns =
      counterValue(after, 'tao_transactions_total', { result: 'committed' }) - counterValue(before, 'tao_transactions_total', { result: 'committed' });
    return {
      label,
      code: setup.code,
      stage,
      records: corpus.length,
      seconds,
      recordsPerSecond: corpus.length / seconds,
      cpuMs,
      cpuMsPerRecord: cpuMs / corpus.length,
      recordsPerTransaction: corpus.length / Math.max(1, txns),
    };
  } finally {
    await fleet.stop();
    await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns.namespace}.`));
  }
}

function untilOutcomes(topic: string, n: number) {
  return (records: Array<{ topic: string }>) => records.filter((r) => r.topic === topic).length >= n;
}

/** Instances' health now: true when every live process answers /health with 200. */
export async function allHealthy(fleet: Fleet): Promise<boolean> {
  const answers = await Promise.all(
    fleet
      .alive()
      .filter((i) => i.opsPort > 0)
      .map((i) => getJson(i.opsPort, '/health')),
  );
  return answers.every((a) => a !== null && a.status === 200);
}

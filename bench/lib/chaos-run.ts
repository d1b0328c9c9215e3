/**
 * Chaos under load: runs are submitted at a steady rate while stage instances are SIGKILLed at
 * random (and replaced, as a supervisor would) and, optionally, the broker is restarted; then the
 * committed log is read back with read_committed and every submitted run is accounted for.
 *
 * What is measured:
 * - lost runs: submitted (acknowledged by the broker) but without a committed outcome;
 * - duplicated steps: a (thought_id, iteration, step) requested, resulted or judged twice, or a run
 *   with two outcomes, in the committed log (the exactly-once check);
 * - side effects applied twice: the runs refund their order, a share of the refunds is answered
 *   late on every attempt (./chaos-side-effects.ts), and the tool server counts what it applied
 *   by `Idempotency-Key`;
 * - task completion and self-recovery rates of the submitted runs;
 * - recovery time per kill: until the killed stage's consumer-group lag is back under its level
 *   just before the kill, and the longest pause in outcomes after it;
 * - on a multi-broker cluster (`brokerFaults`, ./chaos-cluster.ts): leader kills, a rolling restart
 *   and a whole-cluster outage beside the stage kills, the time from each to the loop committing
 *   again, and the ingress's answers while every broker is down.
 */
import { createWriteStream, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { createProducer } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { brokerRecovery, runBrokerFaults, type BrokerFault, type BrokerFaultPlan, type BrokerRecovery, type ClusterControl } from './chaos-cluster.ts';
import { STAGES } from '../../processors/wiring/index.ts';
import type { Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { RolloutDriver, type RolloutReport } from './chaos-rollouts.ts';
import { CHAOS_FLOW, sideEffectsOf, slowRefundFault, writeChaosFlows, type SideEffects } from './chaos-side-effects.ts';
import { DEAD_LETTERED } from '../../topics/catalog.ts';
import type { FaultSpec } from '../../tool-server/server.ts';
import { Fleet, freshNamespace, getJson, progress, sleep, stageSpec, type BenchNamespace, type Instance } from './harness.ts';
import { connectProducer, readLog } from './load.ts';
import { decodeLoopRecords, duplicatedSteps, loopTopicNames, runRates, type RunRates } from './loop-log.ts';
import { STAGE_INPUTS, deleteNamespace, startStages } from './phases.ts';
import { percentile, summary } from './stats.ts';

type Stage = (typeof STAGES)[number];

/** A demo tool server: its URL, a way to replace its faults (specs as in tool-server/faults.ts), and the side effects it applied per key. */
export interface ToolControl {
  url: string;
  setFaults(faults: Array<Record<string, unknown>>): Promise<void>;
  effectsByKey(): Promise<Record<string, number>>;
}

/** The {@link ToolControl} of a tool server running in this process (the chaos tests start one). */
export function inProcessToolControl(server: {
  url: string;
  clearFaults(): void;
  setFault(spec: FaultSpec): unknown;
  stats(): { effectsByKey: Record<string, number> };
}): ToolControl {
  return {
    url: server.url,
    effectsByKey: () => Promise.resolve(server.stats().effectsByKey),
    setFaults: async (faults) => {
      server.clearFaults();
      for (const f of faults) server.setFault(f as unknown as FaultSpec);
    },
  };
}

/** How a chaos run is driven. */
export interface ChaosOptions {
  runs: number;
  /** SIGKILLs of a random stage instance (the first three hit thought, action and observation in random order). */
  kills: number;
  killEveryMs: number;
  /** Instances per stage. */
  instances: number;
  /** Background tool failures (`server_error` on this fraction of calls), so that runs have something to recover from. */
  toolServerErrorRate: number;
  /** Restarts the broker once, after half the kills, with these functions (null: no broker restart). */
  brokerRestart: null | { stop(): Promise<void>; start(): Promise<void> };
  /**
   * Broker faults on a multi-broker cluster, run beside the stage kills (./chaos-cluster.ts). With an
   * outage the driver also runs an ingress and posts a task to it every second while every broker
   * is down (each must get 503), then until one is accepted.
   */
  brokerFaults?: null | { plan: BrokerFaultPlan; cluster: ClusterControl };
  /** Over how long the runs are submitted (default: the stage kills' span, (kills + 2) × killEveryMs). */
  submitMs?: number;
  /** Base environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL of the broker under test). */
  env: NodeJS.ProcessEnv;
  /** The demo tool server the stages call, and how to set its faults. */
  tools: ToolControl;
  /** How long to wait for the last outcomes after the last submission. */
  drainTimeoutMs: number;
  seed: number;
  /** A file every stage line is appended to (tagged with the instance), to read after a bad run. */
  stageLog?: string;
  /** Progress lines; default stderr. */
  log?: (line: string) => void;
  /** Moves the release pointer through three published releases around the kills (./chaos-rollouts.ts). */
  rollouts?: boolean;
}

/** One kill and how the killed stage recovered. */
export interface KillRecord {
  n: number;
  stage: Stage;
  pid: number;
  atS: number;
  /** Until the stage's group lag was back at or under its level just before the kill (null: not within the window). */
  lagRecoveryMs: number | null;
  /** Longest gap between two outcomes in the window after the kill (until the next kill, at most 30 s). */
  outcomePauseMs: number | null;
  /** Until the replacement process printed its ready line. */
  replacementReadyMs: number | null;
}

/** The chaos report. */
export interface ChaosReport {
  namespace: string;
  options: Omit<ChaosOptions, 'brokerRestart' | 'brokerFaults' | 'env' | 'log' | 'tools'> & { brokerRestart: boolean; brokerFaults: BrokerFaultPlan | null };
  durationSeconds: number;
  submitted: number;
  /** Task batches written again after a send failed (at-least-once submission). */
  resubmittedBatches: number;
  outcomes: number;
  lostRuns: string[];
  /**
   * Where the lost runs stopped: per loop topic, how many lost runs have that as their last
   * committed record (`tasks` = Thought never planned; `thoughtRequests` = Action never answered the
   * wave; `actionResults` = Observation never verified it; `observationResults` = Thought never
   * went on), and the partitions those last records are on. Empty when none was lost.
   */
  lostAt: Record<string, { runs: number; partitions: number[] }>;
  duplicatedSteps: string[];
  /** Task records written twice by the submitter's retries (Thought ignores them). */
  duplicatedTasks: number;
  /** Dead letters per dead-letter topic (none expected). */
  deadLetters: Record<string, number>;
  /** The runs' refunds as the tool server applied them, counted by key (`appliedTwice`: none expected). */
  sideEffects: SideEffects;
  /** Committed records that did not decode (none expected). */
  undecodable: number;
  rates: RunRates;
  kills: KillRecord[];
  killRecovery: { lagRecoveryMs: ReturnType<typeof summary>; outcomePauseMs: ReturnType<typeof summary>; replacementReadyMs: ReturnType<typeof summary> };
  brokerRestart: null | { atS: number; downMs: number; lagRecoveryMs: number | null; outcomePauseMs: number | null };
  /** Broker faults on a cluster and how the loop came back from each (null: none). */
  brokerFaults: null | {
    recoveries: BrokerRecovery[];
    /** The whole-cluster outage as the ingress and the runs saw it (null: no outage). */
    outage: null | {
      /** Runs submitted without an outcome seen when every broker was stopped. */
      runsInFlightAtStart: number;
      /** Answers to the tasks posted while every broker was down, by HTTP status. */
      answersWhileDown: Record<string, number>;
      /** From the stop to the first task the ingress accepted after the brokers were back. */
      firstAcceptedMs: number | null;
    };
  };
  /** Processes that exited without being killed by the chaos driver. */
  unexpectedExits: Array<{ name: string; code: number | string; atS: number; lastLines: string[] }>;
  /** Instances whose /health stayed 503 (their consumer had stopped) and were replaced, as a liveness probe would. */
  unhealthyReplaced: Array<{ name: string; atS: number; unhealthyForS: number; why: string; lastErrors: string[] }>;
  /** Run latency (task → outcome, ms) of the submitted runs. */
  runMs: ReturnType<typeof summary>;
  /**
   * Partition handovers as the stages logged them: batches whose head a previous owner had already
   * committed (skipped by the new owner's claim; each one a duplicate the claim prevented), and
   * transactions that failed and were retried (mostly an old owner fenced by a new one).
   */
  handovers: { skippedBatches: number; skippedRecords: number; failedTransactions: number };
  /** With `rollouts`: the pointer moves, the kills that landed during them, and the runs' manifests checked (null: no rollouts). */
  rollouts: RolloutReport | null;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sum over `group`'s input partitions of (high watermark - committed offset); null when the broker does not answer. */
async function groupLag(admin: Admin, group: string, topics: string[]): Promise<number | null> {
  try {
    let lag = 0;
    const committed = await admin.fetchOffsets({ groupId: group, topics });
    for (const t of topics) {
      const ends = await admin.fetchTopicOffsets(t);
      const mine = committed.find((c) => c.topic === t)?.partitions ?? [];
      for (const e of ends) {
        const c = Number(mine.find((p) => p.partition === e.partition)?.offset ?? -1);
        lag += Math.max(0, Number(e.high) - Math.max(0, c));
      }
    }
    return lag;
  } catch {
    return null; // the broker is down or restarting: no sample
  }
}

/** Runs the chaos described by `options` and accounts for every submitted run. */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const log = options.log ?? ((line: string) => progress(started, line));
  const rnd = mulberry32(options.seed);
  // The runs' flow refunds their order: a call with side effects, a share of them answered late.
  const flowsDir = join(tmpdir(), `tao-chaos-flows-${process.pid}-${randomUUID().slice(0, 8)}`);
  writeChaosFlows(flowsDir);
  const ns: BenchNamespace = await freshNamespace('chaos', options.env, {
    TAO_DEMO_TOOL_ORIGIN: options.tools.url,
    TAO_FLOWS_DIR: flowsDir,
    TAO_FLOW: CHAOS_FLOW,
  });
  await options.tools.setFaults([
    slowRefundFault(),
    ...(options.toolServerErrorRate > 0 ? [{ route: '*', mode: 'server_error', rate: options.toolServerErrorRate }] : []),
  ]);
  const topics = ns.codec.topics;
  const handovers = { skippedBatches: 0, skippedRecords: 0, failedTransactions: 0 };
  const stageLog = options.stageLog ? createWriteStream(options.stageLog, { flags: 'a' }) : null;
  const fleet = new Fleet((line) => {
    stageLog?.write(`${line}\n`);
    if (line.includes('records a previous owner committed were skipped')) {
      handovers.skippedBatches++;
      handovers.skippedRecords += Number(/"skipped":(\d+)/.exec(line)?.[1] ?? 0);
    } else if (line.includes('transaction aborted; the chunk is retried')) handovers.failedTransactions++;
  });
  const groups: Record<Stage, string> = { thought: topics.group('thought'), action: topics.group('action'), observation: topics.group('observation') };
  const inputs: Record<Stage, string[]> = {
    thought: STAGE_INPUTS.thought.map((id) => topics.name(id)),
    action: STAGE_INPUTS.action.map((id) => topics.name(id)),
    observation: STAGE_INPUTS.observation.map((id) => topics.name(id)),
  };
  const admin = ns.kafka.admin();
  const lagSamples: Record<Stage, Array<{ at: number; lag: number }>> = { thought: [], action: [], observation: [] };
  const kills: Array<KillRecord & { at: number; ready: number | null }> = [];
  const unhealthyReplaced: ChaosReport['unhealthyReplaced'] = [];
  let brokerRestart: (ChaosReport['brokerRestart'] & { at: number; upAt: number }) | null = null;
  let stopMonitors = false;
  // While every broker is down (and for a while after) nothing is killed and no instance is replaced
  // for failing /health: the outage is to show that the loop comes back by itself.
  let quietUntil = 0;
  let outageDown = false;
  let faults: BrokerFault[] = [];
  const outage = { runsInFlightAtStart: 0, answersWhileDown: {} as Record<string, number>, acceptedAt: null as number | null, accepted: [] as string[] };
  let ingress: Ingress | null = null;
  let ingressProducer: ReturnType<typeof createProducer> | null = null;
  const tasks: Task[] = Array.from({ length: options.runs }, (_, i) =>
    buildTask({ text: `order status for chaos${i}@example.com`, source: 'chaos', external_id: `${ns.namespace}-${i}` }),
  );
  let resubmittedBatches = 0;
  let submitted = 0;
  const replacements: Array<Promise<unknown>> = [];
  let keepEvidence = false;
  let rollouts: RolloutDriver | null = null;

  // Like a supervisor with a restart policy: a replacement that exits while starting (a broker
  // down during its start-up is a normal exit 1) is started again, up to 10 times; without this a
  // stage whose replacements all failed had no instance left and every run stalled.
  const replace = (stage: Stage) => {
    const p = (async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await fleet.start(stageSpec(stage, ns.env), 120000);
        } catch (err) {
          log(`chaos: replacement ${stage} failed to start (attempt ${attempt}): ${(err as Error).message.split('\n')[0]}`);
          if (stopMonitors || attempt >= 10) return undefined;
          await sleep(2000);
        }
      }
    })();
    replacements.push(p);
    return p;
  };

  try {
    await admin.connect();
    log(`chaos: ${options.instances} instance(s) per stage in ${ns.namespace}`);
    // The releases are published (the deployment's activated) before the stages start.
    if (options.rollouts) rollouts = await RolloutDriver.prepare(ns.env, { kafka: ns.kafka, codec: ns.codec, log });
    await startStages(fleet, ns.env, options.instances);

    const follower = await followOutcomeKeys(ns, log);
    const monitors = (async () => {
      while (!stopMonitors) {
        await Promise.all(
          STAGES.map(async (s) => {
            const lag = await groupLag(admin, groups[s], inputs[s]);
            if (lag !== null) lagSamples[s].push({ at: Date.now(), lag });
          }),
        );
        // A supervisor's liveness probe: an instance that stays unhealthy for 15 s is replaced.
        for (const i of fleet.alive()) {
          if (i.opsPort === 0 || Date.now() - i.startedAt < 15000 || Date.now() < quietUntil) continue;
          const h = await getJson<{ lastError?: string | null }>(i.opsPort, '/health', 1000);
          const bad = i as Instance & { badSince?: number };
          if (h?.status === 200) bad.badSince = undefined;
          else if ((bad.badSince ??= Date.now()) < Date.now() - 15000) {
            const why = h ? `HTTP ${h.status}${h.body.lastError ? `: ${h.body.lastError}` : ''}` : 'no answer';
            log(`chaos: ${i.name}#${i.id} unhealthy for 15 s (${why}): replacing it`);
            const tag = `${i.name}#${i.id}: `;
            unhealthyReplaced.push({
              name: i.name,
              atS: (Date.now() - started) / 1000,
              unhealthyForS: (Date.now() - bad.badSince) / 1000,
              why,
              lastErrors: fleet.lines
                .filter((l) => l.startsWith(tag) && /"level":"(error|warn)"/.test(l))
                .slice(-5)
                .map((l) => l.slice(tag.length, tag.length + 400)),
            });
            await fleet.kill(i);
            void replace(i.name as Stage);
          }
        }
        await sleep(500);
      }
    })();

    const producer = await connectProducer(ns.kafka);
    const duration = options.submitMs ?? (options.kills + 2) * options.killEveryMs;
    const perTick = options.runs / (duration / 200);
    const submitter = (async () => {
      let due = 0;
      while (submitted < options.runs) {
        due += perTick;
        const n = Math.min(options.runs - submitted, Math.floor(due));
        due -= n;
        if (n > 0) {
          const batch = tasks.slice(submitted, submitted + n);
          for (let attempt = 0; ; attempt++) {
            try {
              await submitTasks(producer, ns.codec, batch);
              break;
            } catch (err) {
              resubmittedBatches++;
              if (attempt % 5 === 0) log(`chaos: task batch not acknowledged (${(err as Error).message}); sending it again`);
              await sleep(1000);
            }
          }
          submitted += n;
        }
        await sleep(200);
      }
    })();

    const killer = (async () => {
      await sleep(options.killEveryMs);
      const firstRound = [...STAGES].sort(() => rnd() - 0.5);
      for (let n = 1; kills.length < options.kills; n++) {
        if (options.brokerRestart && !brokerRestart && kills.length === Math.ceil(options.kills / 2)) {
          const at = Date.now();
          log(`chaos: restarting the broker`);
          await options.brokerRestart.stop();
          const down = Date.now();
          await sleep(2000);
          await options.brokerRestart.start();
          brokerRestart = { at, atS: (at - started) / 1000, upAt: Date.now(), downMs: Date.now() - down, lagRecoveryMs: null, outcomePauseMs: null };
          log(`chaos: broker back after ${brokerRestart.downMs} ms`);
          await sleep(options.killEveryMs);
        }
        const live = (s: Stage) => fleet.alive(s).filter((i) => i.opsPort > 0);
        // The first three kills hit each stage once, then any stage; when the chosen stage has no live
        // instance (its replacement is still starting) another stage is hit instead.
        const wanted: Stage = n <= 3 ? firstRound[n - 1]! : STAGES[Math.floor(rnd() * STAGES.length)]!;
        const stage = live(wanted).length > 0 ? wanted : STAGES.find((s) => live(s).length > 0);
        const candidates = stage ? live(stage) : [];
        const victim = candidates[Math.floor(rnd() * candidates.length)];
        if (Date.now() < quietUntil) {
          await sleep(1000);
          continue;
        }
        if (!stage || !victim) {
          log(`chaos: no live instance to kill (replacements still starting); waiting`);
          await sleep(1000);
          continue;
        }
        // With rollouts the kill lands right after a pointer write, while the stages apply it.
        await rollouts?.move();
        const at = Date.now();
        const pid = victim.child.pid ?? 0;
        await fleet.kill(victim, 'SIGKILL');
        const record = {
          n: kills.length + 1,
          stage,
          pid,
          at,
          atS: (at - started) / 1000,
          lagRecoveryMs: null,
          outcomePauseMs: null,
          replacementReadyMs: null,
          ready: null as number | null,
        };
        kills.push(record);
        log(`chaos: kill ${kills.length}/${options.kills}: SIGKILL ${stage} pid ${pid}`);
        void replace(stage).then((inst) => {
          if (inst && typeof inst === 'object') record.ready = Date.now();
        });
        await (rollouts ? rollouts.pace(options.killEveryMs) : sleep(options.killEveryMs));
      }
    })();

    const brokerFaults = (async () => {
      const bf = options.brokerFaults;
      if (!bf) return;
      let probe = 0;
      const post = async (): Promise<{ status: number; thoughtId?: string }> => {
        const body = JSON.stringify({ text: `order status for outage${probe}@example.com`, source: 'chaos', external_id: `${ns.namespace}-outage-${probe++}` });
        try {
          const res = await fetch(`${ingress!.url}/v1/tasks`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
            signal: AbortSignal.timeout(15000),
          });
          const answer = (await res.json()) as { thought_id?: string };
          return { status: res.status, thoughtId: answer.thought_id };
        } catch (err) {
          return { status: 0, thoughtId: `(${(err as Error).message})` };
        }
      };
      if (bf.plan.outageMs !== null) {
        const logger = createLogger({ bench: 'chaos-ingress' }, { level: 'error' });
        ingressProducer = createProducer(ns.kafka, { retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 } });
        await ingressProducer.connect();
        ingress = await startIngress(
          { port: 0, host: '127.0.0.1', maxBodyBytes: 65536, sendTimeoutMs: 3000, maxInFlightRuns: 1_000_000 },
          { producer: ingressProducer, codec: ns.codec, logger },
        );
      }
      faults = await runBrokerFaults(bf.plan, bf.cluster, {
        admin,
        loopTopics: loopTopicNames(ns),
        log,
        onOutage: (down) => {
          outageDown = down;
          if (down) {
            outage.runsInFlightAtStart = submitted - follower.keys.size;
            quietUntil = Number.POSITIVE_INFINITY;
          } else quietUntil = Date.now() + 90000;
        },
        duringOutage: async () => {
          const { status } = await post();
          // An answer that arrives after the brokers are back is not an answer "while down".
          if (outageDown) outage.answersWhileDown[status] = (outage.answersWhileDown[status] ?? 0) + 1;
        },
      });
      const back = faults.find((f) => f.kind === 'outage');
      if (back && ingress) {
        const deadline = Date.now() + 120000;
        while (Date.now() < deadline) {
          const { status, thoughtId } = await post();
          if (status === 202 && thoughtId) {
            outage.acceptedAt = Date.now();
            outage.accepted.push(thoughtId);
            break;
          }
          await sleep(1000);
        }
        log(
          `chaos: the ingress accepted a task ${outage.acceptedAt ? `${outage.acceptedAt - back.at} ms after the outage began` : 'never (within 120 s of the brokers coming back)'}`,
        );
      }
    })();

    await Promise.all([submitter, killer, brokerFaults]);
    await producer.disconnect();
    await Promise.all(replacements);
    log(`chaos: ${submitted} runs submitted, ${kills.length} kills; waiting for outcomes`);
    const deadline = Date.now() + options.drainTimeoutMs;
    let lastCount = -1;
    let lastChange = Date.now();
    const expected = () => options.runs + outage.accepted.length;
    while (follower.keys.size < expected() && Date.now() < deadline) {
      await sleep(500);
      if (follower.keys.size !== lastCount) [lastCount, lastChange] = [follower.keys.size, Date.now()];
      else if (Date.now() - lastChange > 15000) {
        // The follower may have missed records around the broker restart: count from the log itself.
        const n = new Set((await readLog(ns.kafka, [topics.name('outcomes')], { idleMs: 1000, timeoutMs: 30000 })).map((r) => r.key)).size;
        log(`chaos: ${follower.keys.size} outcomes followed, ${n} in the log`);
        if (n >= expected()) break;
        lastChange = Date.now();
      }
    }
    await sleep(2000);
    stopMonitors = true;
    await monitors;
    await follower.stop();

    log(`chaos: reading the committed log`);
    const raw = await readLog(ns.kafka, [...loopTopicNames(ns), ...DEAD_LETTERED.map((id) => topics.dlq(id))], { idleMs: 3000, timeoutMs: 180000 });
    const deadLetters: Record<string, number> = {};
    for (const id of DEAD_LETTERED) deadLetters[topics.dlq(id)] = raw.filter((r) => r.topic === topics.dlq(id)).length;
    const records = await decodeLoopRecords(
      ns,
      raw.filter((r) => !r.topic.endsWith('.dlq')),
    );
    const ids = new Set([...tasks.map((t) => t.thought_id), ...outage.accepted]);
    const outcomeKeys = new Set(records.filter((r) => r.id === 'outcomes').map((r) => r.key));
    const dups = duplicatedSteps(records.filter((r) => ids.has(r.key)));
    const rolloutReport = rollouts ? await rollouts.report(raw, records, ids, kills) : null;
    keepEvidence = dups.steps.length > 0 || [...ids].some((id) => !outcomeKeys.has(id)) || Boolean(rolloutReport?.violations.length);
    const taskTimes = new Map(records.filter((r) => r.id === 'tasks').map((r) => [r.key, r.timestamp]));
    const runMs = records.filter((r) => r.id === 'outcomes' && ids.has(r.key)).map((r) => r.timestamp - (taskTimes.get(r.key) ?? r.timestamp));

    // Pauses are read from the committed outcomes' own timestamps, not from when a follower saw them.
    const sortedOutcomes = records
      .filter((r) => r.id === 'outcomes')
      .map((r) => r.timestamp)
      .sort((a, b) => a - b);
    const pauseAfter = (from: number, to: number) => {
      const inWindow = [from, ...sortedOutcomes.filter((t) => t > from && t < to), Math.min(to, sortedOutcomes[sortedOutcomes.length - 1] ?? to)];
      let max = 0;
      for (let i = 1; i < inWindow.length; i++) max = Math.max(max, inWindow[i]! - inWindow[i - 1]!);
      return max;
    };
    const lagRecovery = (stage: Stage, at: number, until: number) => {
      const before = lagSamples[stage].filter((s) => s.at < at && s.at >= at - 5000).map((s) => s.lag);
      if (before.length === 0) return null;
      const level = percentile(before, 90);
      const after = lagSamples[stage].filter((s) => s.at > at + 500 && s.at <= until);
      const back = after.find((s) => s.lag <= level);
      return back ? back.at - at : null;
    };
    const done: KillRecord[] = kills.map((k, i) => {
      const next = kills[i + 1]?.at ?? k.at + 30000;
      const window = Math.min(next, k.at + 30000);
      return {
        n: k.n,
        stage: k.stage,
        pid: k.pid,
        atS: k.atS,
        lagRecoveryMs: lagRecovery(k.stage, k.at, k.at + 30000),
        outcomePauseMs: pauseAfter(k.at, window),
        replacementReadyMs: k.ready ? k.ready - k.at : null,
      };
    });
    let broker: ChaosReport['brokerRestart'] = null;
    const br = brokerRestart as (NonNullable<ChaosReport['brokerRestart']> & { at: number; upAt: number }) | null;
    if (br) {
      const recoveries = STAGES.map((s) => lagRecovery(s, br.at, br.at + 60000));
      broker = {
        atS: br.atS,
        downMs: br.downMs,
        lagRecoveryMs: recoveries.some((r) => r === null) ? null : Math.max(...(recoveries as number[])),
        outcomePauseMs: pauseAfter(br.at, br.upAt + 30000),
      };
    }
    const num = (xs: Array<number | null>) => xs.filter((x): x is number => x !== null);
    return {
      namespace: ns.namespace,
      options: {
        runs: options.runs,
        kills: options.kills,
        killEveryMs: options.killEveryMs,
        instances: options.instances,
        toolServerErrorRate: options.toolServerErrorRate,
        drainTimeoutMs: options.drainTimeoutMs,
        seed: options.seed,
        submitMs: duration,
        brokerRestart: options.brokerRestart !== null,
        brokerFaults: options.brokerFaults?.plan ?? null,
        rollouts: options.rollouts ?? false,
      },
      durationSeconds: (Date.now() - started) / 1000,
      submitted,
      resubmittedBatches,
      outcomes: [...ids].filter((id) => outcomeKeys.has(id)).length,
      lostRuns: [...ids].filter((id) => !outcomeKeys.has(id)),
      lostAt: whereLost(
        records,
        [...ids].filter((id) => !outcomeKeys.has(id)),
      ),
      duplicatedSteps: dups.steps,
      duplicatedTasks: dups.tasks.length,
      deadLetters,
      sideEffects: sideEffectsOf(
        await options.tools.effectsByKey(),
        records.filter((r) => r.id === 'thoughtRequests' && r.decoded).map((r) => r.decoded as unknown as ThoughtRequest),
        ids,
      ),
      undecodable: records.filter((r) => r.decoded === null).length,
      rates: runRates(records, ids),
      kills: done,
      killRecovery: {
        lagRecoveryMs: summary(num(done.map((k) => k.lagRecoveryMs))),
        outcomePauseMs: summary(num(done.map((k) => k.outcomePauseMs))),
        replacementReadyMs: summary(num(done.map((k) => k.replacementReadyMs))),
      },
      brokerRestart: broker,
      brokerFaults: options.brokerFaults
        ? {
            recoveries: brokerRecovery(
              faults,
              raw.filter((r) => !r.topic.endsWith('.dlq')),
              topics.name('outcomes'),
              started,
            ),
            outage:
              options.brokerFaults.plan.outageMs === null
                ? null
                : {
                    runsInFlightAtStart: outage.runsInFlightAtStart,
                    answersWhileDown: outage.answersWhileDown,
                    firstAcceptedMs: outage.acceptedAt === null ? null : outage.acceptedAt - (faults.find((f) => f.kind === 'outage')?.at ?? outage.acceptedAt),
                  },
          }
        : null,
      unexpectedExits: fleet.unexpectedExits.map((e) => ({ ...e, atS: (e.at - started) / 1000 })),
      unhealthyReplaced,
      runMs: summary(runMs),
      handovers,
      rollouts: rolloutReport,
    };
  } finally {
    stopMonitors = true;
    await (ingress as Ingress | null)?.close();
    await (ingressProducer as ReturnType<typeof createProducer> | null)?.disconnect().catch(() => undefined);
    await fleet.stop();
    await admin.disconnect().catch(() => undefined);
    // A namespace with lost or duplicated steps is the evidence: it stays for `tao replay`.
    if (keepEvidence) log(`chaos: keeping namespace ${ns.namespace} (lost or duplicated steps, or runs off their manifest) for inspection`);
    else await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns.namespace}.`));
    stageLog?.end();
    (rollouts as RolloutDriver | null)?.cleanup();
    rmSync(flowsDir, { recursive: true, force: true });
  }
}

/**
 * Follows the distinct run keys written to `tao.outcomes`, read_committed from the beginning. A
 * consumer that crashes for good (as kafkajs consumers may around a broker restart) is replaced
 * by a new one that reads from the beginning again.
 */
async function followOutcomeKeys(ns: BenchNamespace, log: (line: string) => void): Promise<{ keys: Set<string>; stop(): Promise<void> }> {
  const keys = new Set<string>();
  let consumer: ReturnType<BenchNamespace['kafka']['consumer']> | null = null;
  let stopped = false;
  const start = async (): Promise<void> => {
    const c = ns.kafka.consumer({ groupId: `bench-outcomes-${randomUUID()}`, readUncommitted: false, sessionTimeout: 30000 });
    consumer = c;
    c.on(c.events.CRASH, ({ payload }) => {
      if (payload.restart || stopped) return;
      log(`chaos: outcome follower crashed (${payload.error.message}); starting a new one`);
      void c.disconnect().catch(() => undefined);
      setTimeout(() => void start().catch((err: Error) => log(`chaos: outcome follower did not restart: ${err.message}`)), 1000);
    });
    await c.connect();
    await c.subscribe({ topic: ns.codec.topics.name('outcomes'), fromBeginning: true });
    await c.run({ autoCommit: false, eachMessage: async ({ message }) => void keys.add(message.key?.toString('utf8') ?? '') });
  };
  await start();
  return {
    keys,
    stop: async () => {
      stopped = true;
      await consumer?.disconnect().catch(() => undefined);
    },
  };
}

/** A unique seed when none is given. */
export function randomSeed(): number {
  return Number.parseInt(randomUUID().slice(0, 8), 16);
}

/** For `ChaosReport.lostAt`: the last committed loop record of each lost run (by its CreateTime), counted by topic. */
export function whereLost(
  records: ReadonlyArray<{ id: string; key: string; partition: number; timestamp: number }>,
  lost: readonly string[],
): ChaosReport['lostAt'] {
  const wanted = new Set(lost);
  const order = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults'];
  const last = new Map<string, { id: string; partition: number; timestamp: number }>();
  for (const r of records) {
    if (!wanted.has(r.key) || !order.includes(r.id)) continue;
    const seen = last.get(r.key);
    // One stage's record follows the one it answers; equal timestamps are ordered by stage.
    if (!seen || r.timestamp > seen.timestamp || (r.timestamp === seen.timestamp && order.indexOf(r.id) > order.indexOf(seen.id))) last.set(r.key, r);
  }
  const out: ChaosReport['lostAt'] = {};
  for (const id of lost) {
    const at = last.get(id);
    const entry = (out[at?.id ?? 'nothing committed'] ??= { runs: 0, partitions: [] });
    entry.runs++;
    if (at && !entry.partitions.includes(at.partition)) entry.partitions.push(at.partition);
  }
  for (const e of Object.values(out)) e.partitions.sort((a, b) => a - b);
  return out;
}

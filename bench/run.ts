/**
 * `npm run bench`: the loop's speed measured against the best this design can do on this machine.
 *
 *   node --import tsx bench/run.ts [--out report.json] [--runs 2000] [--concurrency 256]
 *       [--warmup 2000] [--probe-runs 40] [--probe-concurrency 4]
 *       [--ab A | A..B] [--quick] [--budget-s 570]
 *       [--model | --model-only] [--model-latency-ms 300] [--ab-only]
 *
 * Phases, each in a fresh namespace on the broker named by KAFKA_BROKERS / SCHEMA_REGISTRY_URL:
 * 1. the TAO loop, 1 instance per stage, tool latency 0 ms (also calibrates the relay's record sizes);
 * 2. the relay ceiling (bench/relay/), 1 process per hop;
 * 3. the loop with every tool call taking 20 ms;
 * 4-5. the loop and the relay with 2 instances per stage / hop (the topics have 6 partitions);
 * 6. A/B of two versions, in ABBA order so that drift cancels out: (a) Observation alone draining
 *    the loop's action.results records (CPU per record, records/s; two ABBA rounds), (b) the whole
 *    loop, (c) the featurizer of both versions in this process when the change touches it. A is
 *    commit A, B commit B or the checkout as it is (bench/lib/ab.ts).
 * With --scaling (or alone with --scaling-only): every tool call 300 ms, Action at 1, 2 and 3
 *    instances; --scaling-only --ab runs those in ABBA sets of A and B.
 * 7. with --model (or alone with --model-only): the ReAct loop (TAO_PLANNER=react) against the model
 *    SIMULATOR (model-sim/, its own process) answering at once, then every answer `model-latency-ms`
 *    (300) late; runs/s and model turns/s of both side by side.
 * Each phase: warm-up, then `runs` runs with `concurrency` in flight (throughput, saturated), then a
 * latency probe of `probe-runs` runs with `probe-concurrency` in flight. Progress goes to stderr;
 * the table to stdout; the JSON report to `--out`. The code measured is a snapshot of the checkout
 * taken at the start (bench/lib/ab.ts), so edits made while the bench runs do not leak in.
 */
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { existsSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { kafkaHealth, registryHealth } from '../infra/health.ts';
import { KAFKA_VERSION } from '../infra/local.ts';
import { abTrees, checkoutTree, removeTrees, type Tree } from './lib/ab.ts';
import { Fleet, progress, quietOwnLogs, startModelSimProcess, startToolServerProcess } from './lib/harness.ts';
import { drainPhase, loopPhase, relayPhase, type DrainResult, type PhaseLoad, type PhaseResult } from './lib/phases.ts';
import { fmt, table } from './lib/stats.ts';
import { peerPhase, type PeerResult } from './lib/peer.ts';
import type { ActionResult } from '../schemas/types.gen.ts';
import { setting } from '../runtime/config.ts';

/** Options of one bench run. */
export interface BenchOptions {
  load: PhaseLoad;
  /** The versions to A/B: `A` (commit A against the checkout) or `A..B` (two commits); null: no A/B phases. */
  ab: string | null;
  /** Runs per A/B phase. */
  abRuns: number;
  /** Wall-time budget: the whole-loop A/B phases are skipped once it would be exceeded. */
  budgetSeconds: number;
  /** The ReAct phases: off, after the others, or alone. */
  model: 'off' | 'also' | 'only';
  /** Latency of every model answer in the slow ReAct phase (ms); the other ReAct phase has 0. */
  modelLatencyMs: number;
  /** Action scaling with slow tools: off, after the others, or alone. */
  scaling: 'off' | 'also' | 'only';
  /** Latency of every tool call in the scaling phases (ms). */
  scalingLatencyMs: number;
  /** Action instance counts of the scaling phases (Thought and Observation: 1 each). */
  scalingInstances: number[];
  /** The headline loop/relay pair again with this many runs in flight (0: not), and its run count. */
  high: { concurrency: number; runs: number };
  /** LangGraph.js with its SQLite checkpointer on the loop's shape (bench/peer/): off, after the headline pair, or alone. */
  peer: 'off' | 'also' | 'only';
  /** Only the first loop phase (the A/B's corpus) and the A/B phases. */
  abOnly?: boolean;
  /**
   * Runs of an unreported loop phase before the first measured one (0: none), so that no measured
   * phase meets a cold broker, tool server or bench process (see {@link primePhase}).
   */
  primeRuns: number;
}

/** The JSON report. */
export interface BenchReport {
  startedAt: string;
  durationSeconds: number;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGiB: number;
    node: string;
    kafka: string;
    brokers: string;
    loadAverageBefore: number[];
    loadAverageAfter: number[];
  };
  options: BenchOptions;
  phases: PhaseResult[];
  /**
   * Loop runs/s divided by relay runs/s, measured in this run (means over the `#n` repeats), and
   * the stage processes' CPU per run of the relay divided by the loop's (the share of the loop's
   * CPU that is Kafka work the relay does too; less sensitive to other load on the machine).
   */
  ratios: Array<{ loop: string; relay: string; ratio: number; cpuRatio: number }>;
  /** The peer (LangGraph.js + SqliteSaver), with the loop's runs and in-flight count; empty without --peer. */
  peer: PeerResult[];
  /** Loop runs/s ÷ peer runs/s at the same in-flight count (the loop: mean of its `#n` repeats). */
  peerRatios: Array<{ loop: string; peer: string; ratio: number }>;
  /** Scaling phases: runs/s with n Action instances divided by runs/s with the first count. */
  /** Each scaling phase against the first phase of its set; `code` tells the sides of an A/B apart. */
  scaling: Array<{ label: string; code: string; actionInstances: number; runsPerSecond: number; speedup: number }>;
  ab: null | {
    /** `A <rev> (<sha>) against B ...`. */
    versions: string;
    /** Observation alone on a backlog of the loop's own action.results records. */
    drain: { a: DrainResult[]; b: DrainResult[]; summary: Record<string, { a: number; b: number; change: number }> };
    /** The whole loop, 1 instance per stage, tool latency 0 ms. */
    loop: { a: PhaseResult[]; b: PhaseResult[]; summary: Record<string, { a: number; b: number; change: number }>; skipped: string | null };
    /** When the change touches the featurizer: both versions in this process, on the loop's own response bodies (µs per call). */
    featurizer: null | { bodies: number; aMicros: number[]; bMicros: number[] };
  };
}

/** Runs every phase and returns the report. */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const started = Date.now();
  const loadBefore = loadavg();
  const fleet = new Fleet();
  const phases: PhaseResult[] = [];
  const base = process.env;
  let current: Tree | null = null;
  try {
    current = await checkoutTree();
    const ab = options.ab ? await abTrees(options.ab) : null;
    const tools = await startToolServerProcess(fleet, base);
    const load = options.load;
    const common = { started, tools, baseEnv: base, bin: current.bin, code: 'current' };

    // The headline pair runs loop, relay, relay, loop (ABBA), so that a drift in the machine's load
    // weighs on both sides of the ratio alike.
    // Phases bound by waiting (300 ms tools, a model's answers), not by CPU: the JIT's warm-up does
    // not move them, and 4,000 runs at 38 runs/s would take 105 s a phase.
    const waitingLoad = { ...load, warmupRuns: Math.min(load.warmupRuns, 100), runs: Math.min(load.runs, 1000) };
    if (options.model === 'only') {
      phases.push(...(await modelPhases(fleet, common, waitingLoad, options.modelLatencyMs)));
      return report(started, loadBefore, options, phases, [], null);
    }
    if (options.scaling === 'only') {
      if (!ab) phases.push(...(await scalingPhases(common, waitingLoad, options)));
      // --scaling-only --ab: every instance count with A and with B, sets in ABBA order.
      else
        for (const [which, tree] of abbaOrder(ab))
          phases.push(...(await scalingPhases({ ...common, bin: tree.bin, code: tree.code }, waitingLoad, options, ` ${which}`)));
      return report(started, loadBefore, options, phases, [], null);
    }
    // --ab-only: its first loop phase (the corpus) already comes before anything it compares.
    if (!options.abOnly) await primePhase(common, load, options.primeRuns);
    const peer: PeerResult[] = [];
    if (options.peer === 'only') {
      // Loop, peer, peer, loop: the ratio's two sides see the same drift in the machine's load.
      phases.push((await loopPhase({ ...common, label: 'loop 0ms x1 #1', load, instances: 1, toolLatencyMs: 0 })).result);
      peer.push(await peerPhase({ label: 'peer langgraph+sqlite #1', started, load, tools }));
      peer.push(await peerPhase({ label: 'peer langgraph+sqlite #2', started, load, tools }));
      phases.push((await loopPhase({ ...common, label: 'loop 0ms x1 #2', load, instances: 1, toolLatencyMs: 0 })).result);
      return report(started, loadBefore, options, phases, [], null, peer, peerRatios(phases, peer));
    }
    const first = await loopPhase({ ...common, label: 'loop 0ms x1 #1', load, instances: 1, toolLatencyMs: 0 });
    phases.push(first.result);
    const sizes = first.sizes;
    progress(started, `relay record sizes from the loop: ${JSON.stringify(sizes)}`);
    // --ab-only: the first loop phase gives the A/B its corpus; the others are left out.
    if (!options.abOnly) {
      phases.push(await relayPhase({ label: 'relay x1 #1', load, instances: 1, started, sizes, baseEnv: base }));
      phases.push(await relayPhase({ label: 'relay x1 #2', load, instances: 1, started, sizes, baseEnv: base }));
      if (options.peer === 'also') peer.push(await peerPhase({ label: 'peer langgraph+sqlite', started, load, tools }));
      phases.push((await loopPhase({ ...common, label: 'loop 0ms x1 #2', load, instances: 1, toolLatencyMs: 0 })).result);
      phases.push((await loopPhase({ ...common, label: 'loop 20ms x1', load, instances: 1, toolLatencyMs: 20 })).result);
      phases.push((await loopPhase({ ...common, label: 'loop 0ms x2', load, instances: 2, toolLatencyMs: 0 })).result);
      phases.push(await relayPhase({ label: 'relay x2', load, instances: 2, started, sizes, baseEnv: base }));
    }
    if (!options.abOnly && options.high.concurrency > 0) {
      // The high-load pair runs relay first, so that with the 256 pair (loop, relay, relay, loop) the
      // loop's phases are not all at one end of the run.
      const high = { ...load, concurrency: options.high.concurrency, runs: options.high.runs, warmupRuns: Math.max(load.warmupRuns, options.high.concurrency) };
      phases.push(await relayPhase({ label: `relay x1 @${high.concurrency}`, load: high, instances: 1, started, sizes, baseEnv: base }));
      phases.push((await loopPhase({ ...common, label: `loop 0ms x1 @${high.concurrency}`, load: high, instances: 1, toolLatencyMs: 0 })).result);
    }

    let abReport: BenchReport['ab'] = null;
    if (ab) {
      const abba = abbaOrder(ab).map(([which, tree]) => [which.slice(0, 1) as 'A' | 'B', tree] as const);
      const corpus = first.records
        .filter((r) => r.id === 'actionResults' && r.decoded)
        .map((r) => r.decoded as Record<string, unknown> & { thought_id: string });
      const drain = { a: [] as DrainResult[], b: [] as DrainResult[] };
      // Draining is short and the machine noisy: two ABBA rounds.
      for (const [which, tree] of [...abba, ...abba]) {
        (which === 'A' ? drain.a : drain.b).push(
          await drainPhase({
            label: `drain ${which}: ${tree.code}`,
            started,
            baseEnv: base,
            tools,
            bin: tree.bin,
            code: tree.code,
            stage: 'observation',
            corpus,
          }),
        );
      }
      const abLoad = { ...load, runs: options.abRuns };
      const loop = { a: [] as PhaseResult[], b: [] as PhaseResult[], skipped: null as string | null };
      for (const [which, tree] of abba) {
        // The whole-loop A/B is the noisiest and the last: it is what gives way when the machine is slow.
        if (Date.now() - started > options.budgetSeconds * 1000 - 60000) {
          loop.skipped = `time budget of ${options.budgetSeconds} s reached after ${loop.a.length + loop.b.length} of 4 phases`;
          progress(started, `A/B loop: ${loop.skipped}`);
          break;
        }
        const r = (
          await loopPhase({ ...common, bin: tree.bin, code: tree.code, label: `loop ${which}: ${tree.code}`, load: abLoad, instances: 1, toolLatencyMs: 0 })
        ).result;
        (which === 'A' ? loop.a : loop.b).push(r);
      }
      const bodies = first.records.flatMap((r) =>
        r.id === 'actionResults' && r.decoded ? (r.decoded as unknown as ActionResult).results.map((x) => x.response_raw ?? '') : [],
      );
      const featurizer = ab.changed.some((f) => /features\/text\/|runtime\/text-features\.ts/.test(f))
        ? await featurizerAB(ab.a.root, ab.b.root, bodies)
        : null;
      abReport = {
        versions: `${ab.a.code} against ${ab.b.code}`,
        featurizer,
        drain: {
          ...drain,
          summary: compare(drain.a, drain.b, {
            'observation CPU ms/record': (d) => d.cpuMsPerRecord,
            'observation records/s': (d) => d.recordsPerSecond,
            'records/transaction': (d) => d.recordsPerTransaction,
          }),
        },
        loop: { ...loop, summary: loop.a.length && loop.b.length ? abSummary(loop.a, loop.b) : {} },
      };
    }
    if (options.model === 'also') phases.push(...(await modelPhases(fleet, common, waitingLoad, options.modelLatencyMs)));
    if (options.scaling === 'also') phases.push(...(await scalingPhases(common, waitingLoad, options)));
    const pairs = options.abOnly
      ? []
      : [
          ['loop 0ms x1', 'relay x1'],
          ['loop 20ms x1', 'relay x1'],
          ['loop 0ms x2', 'relay x2'],
        ];
    if (!options.abOnly && options.high.concurrency > 0) pairs.push([`loop 0ms x1 @${options.high.concurrency}`, `relay x1 @${options.high.concurrency}`]);
    return report(started, loadBefore, options, phases, pairRatios(phases, pairs), abReport, peer, peerRatios(phases, peer));
  } finally {
    await fleet.stop();
    removeTrees();
    progress(started, `free memory ${Math.round(freemem() / 2 ** 20)} MiB`);
  }
}

function report(
  started: number,
  loadBefore: number[],
  options: BenchOptions,
  phases: PhaseResult[],
  ratios: BenchReport['ratios'],
  ab: BenchReport['ab'],
  peer: PeerResult[] = [],
  peerRatios: BenchReport['peerRatios'] = [],
): BenchReport {
  const scaling = scalingRows(phases, options.scalingInstances[0]!);
  return {
    startedAt: new Date(started).toISOString(),
    durationSeconds: (Date.now() - started) / 1000,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      kafka: `${KAFKA_VERSION} (the local infra's; the broker at KAFKA_BROKERS may differ)`,
      brokers: setting(process.env, 'KAFKA_BROKERS').join(','),
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadavg(),
    },
    options,
    phases,
    ratios,
    peer,
    peerRatios,
    scaling,
    ab,
  };
}

/** The two sides of an A/B in ABBA order, each named by its side and its round (`A #1`, `B #1`, `B #2`, `A #2`). */
function abbaOrder<T>(ab: { a: T; b: T }): Array<readonly [string, T]> {
  return [
    ['A #1', ab.a],
    ['B #1', ab.b],
    ['B #2', ab.b],
    ['A #2', ab.a],
  ];
}

/**
 * The scaling phases, each against the first phase of its set: a run of instance counts of the same
 * code, starting with `firstCount` instances (an A/B has four sets, in ABBA order).
 */
export function scalingRows(phases: PhaseResult[], firstCount: number): BenchReport['scaling'] {
  let base: PhaseResult | undefined;
  return phases
    .filter((p) => p.actionInstances != null)
    .map((p) => {
      if (p.actionInstances === firstCount || base?.code !== p.code) base = p;
      return {
        label: p.label,
        code: p.code,
        actionInstances: p.actionInstances!,
        runsPerSecond: p.runsPerSecond,
        speedup: p.runsPerSecond / base.runsPerSecond,
      };
    });
}

/** CPU ms per run of a phase's stages (or relay hops) together. */
function stageCpuMsPerRun(p: PhaseResult): number {
  return Object.values(p.stages).reduce((sum, st) => sum + st.cpuMsPerRun, 0);
}

/**
 * Loop ÷ relay for each pair of labels: runs/s, and stage CPU per run. Both are means over a
 * label's phases (#1 and #2 of the ABBA pair), so that the bench's first phase, on a broker and JIT
 * still cold, weighs no more than the last.
 */
export function pairRatios(phases: PhaseResult[], pairs: string[][]): BenchReport['ratios'] {
  const mean = (prefix: string, figure: (p: PhaseResult) => number) => {
    const rows = phases.filter((p) => p.label === prefix || p.label.startsWith(`${prefix} #`));
    return rows.reduce((sum, p) => sum + figure(p), 0) / rows.length;
  };
  const rate = (prefix: string) => mean(prefix, (p) => p.runsPerSecond);
  const cpu = (prefix: string) => mean(prefix, stageCpuMsPerRun);
  return pairs.map(([loop, relay]) => ({ loop: loop!, relay: relay!, ratio: rate(loop!) / rate(relay!), cpuRatio: cpu(loop!) / cpu(relay!) }));
}

/** Loop 0 ms x1 (mean of its repeats at the headline in-flight count) ÷ each peer phase. */
function peerRatios(phases: PhaseResult[], peer: PeerResult[]): BenchReport['peerRatios'] {
  const loops = phases.filter((p) => p.label === 'loop 0ms x1' || p.label.startsWith('loop 0ms x1 #'));
  if (!loops.length || !peer.length) return [];
  const loop = loops.reduce((s, p) => s + p.runsPerSecond, 0) / loops.length;
  const peerRate = peer.reduce((s, p) => s + p.runsPerSecond, 0) / peer.length;
  return [{ loop: 'loop 0ms x1', peer: peer.length > 1 ? 'peer langgraph+sqlite (mean)' : peer[0]!.label, ratio: loop / peerRate }];
}

/**
 * Action scaling by consumer groups: every tool call takes `scalingLatencyMs`, Action keeps its
 * default cap of waves in flight per instance (TAO_ACTION_CONCURRENCY), Thought and Observation run
 * one instance each, and the same runs and in-flight count go through 1, 2, 3... Action instances.
 * The tool server answers all of them at once, so what an instance adds is its cap's worth of calls
 * in flight, not CPU (this machine has 2 cores for everything).
 */
async function scalingPhases(
  common: Omit<Parameters<typeof loopPhase>[0], 'label' | 'load' | 'instances' | 'toolLatencyMs'>,
  load: PhaseLoad,
  options: BenchOptions,
  suffix = '',
): Promise<PhaseResult[]> {
  const out: PhaseResult[] = [];
  // An explicit TAO_ACTION_CONCURRENCY in the bench's environment would measure another cap than the default.
  const baseEnv = { ...common.baseEnv };
  delete baseEnv.TAO_ACTION_CONCURRENCY;
  for (const n of options.scalingInstances) {
    out.push(
      (
        await loopPhase({
          ...common,
          baseEnv,
          label: `loop ${options.scalingLatencyMs}ms action x${n}${suffix}`,
          load,
          instances: 1,
          actionInstances: n,
          toolLatencyMs: options.scalingLatencyMs,
        })
      ).result,
    );
  }
  return out;
}

/**
 * The ReAct loop against the model simulator (its own process, one per phase so each phase's
 * latency is set at start): answers at once, then every answer `latencyMs` late, same load.
 */
async function modelPhases(
  fleet: Fleet,
  common: Omit<Parameters<typeof loopPhase>[0], 'label' | 'load' | 'instances' | 'toolLatencyMs'>,
  load: PhaseLoad,
  latencyMs: number,
): Promise<PhaseResult[]> {
  const out: PhaseResult[] = [];
  for (const ms of [0, latencyMs]) {
    const model = await startModelSimProcess(fleet, common.baseEnv, ms, `model-sim-${ms}ms`);
    try {
      out.push((await loopPhase({ ...common, label: `react model ${ms}ms x1`, load, instances: 1, toolLatencyMs: 0, model })).result);
    } finally {
      await fleet.kill(model.instance, 'SIGTERM');
    }
  }
  return out;
}

/**
 * Times `featurizeSparse` of both trees in this process on `texts`, alternating A and B three
 * times: the change's effect on the function alone, free of the other processes' noise.
 */
async function featurizerAB(aRoot: string, bRoot: string, texts: string[]): Promise<{ bodies: number; aMicros: number[]; bMicros: number[] }> {
  type Featurizer = { featurizeSparse(text: string): unknown };
  // features/text/ since the featurizer left runtime/; a tree from before that has runtime/text-features.ts.
  const entry = (root: string) => (existsSync(`${root}features/text/index.ts`) ? `${root}features/text/index.ts` : `${root}runtime/text-features.ts`);
  const a = (await import(pathToFileURL(entry(aRoot)).href)) as Featurizer;
  const b = (await import(pathToFileURL(entry(bRoot)).href)) as Featurizer;
  const time = (f: Featurizer) => {
    const t0 = performance.now();
    for (const t of texts) f.featurizeSparse(t);
    return (1000 * (performance.now() - t0)) / texts.length;
  };
  time(a);
  time(b);
  const out = { bodies: texts.length, aMicros: [] as number[], bMicros: [] as number[] };
  for (let i = 0; i < 3; i++) {
    out.aMicros.push(time(a));
    out.bMicros.push(time(b));
  }
  return out;
}

/** Mean of A and of B for each figure, and B's change relative to A. */
function compare<T>(a: T[], b: T[], figures: Record<string, (r: T) => number>): Record<string, { a: number; b: number; change: number }> {
  const mean = (rs: T[], f: (r: T) => number) => rs.reduce((s, r) => s + f(r), 0) / rs.length;
  const out: Record<string, { a: number; b: number; change: number }> = {};
  for (const [name, f] of Object.entries(figures)) {
    const [ma, mb] = [mean(a, f), mean(b, f)];
    out[name] = { a: ma, b: mb, change: (mb - ma) / ma };
  }
  return out;
}

/** The loop figures an A/B compares. */
function abSummary(a: PhaseResult[], b: PhaseResult[]): Record<string, { a: number; b: number; change: number }> {
  const figures: Record<string, (r: PhaseResult) => number> = {
    'runs/s': (r) => r.runsPerSecond,
    'iteration P50 ms (saturated)': (r) => r.iterationMs.p50,
    'iteration P99 ms (saturated)': (r) => r.iterationMs.p99,
  };
  for (const stage of Object.keys(a[0]?.stages ?? {})) {
    figures[`${stage} CPU ms/run`] = (r) => r.stages[stage]?.cpuMsPerRun ?? Number.NaN;
    figures[`${stage} handle P50 ms`] = (r) => r.stages[stage]?.handleP50Ms ?? Number.NaN;
  }
  return compare(a, b, figures);
}

/** The report as text tables. */
export function renderReport(r: BenchReport): string {
  const m = r.machine;
  const lines: string[] = [];
  lines.push(
    `bench ${r.startedAt}: ${m.cpus} x ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, Kafka ${m.kafka.split(' ')[0]} at ${m.brokers}; load average ${m.loadAverageBefore.map((x) => x.toFixed(2)).join(' ')} before, ${m.loadAverageAfter.map((x) => x.toFixed(2)).join(' ')} after; ${fmt(r.durationSeconds)} s`,
  );
  lines.push('');
  lines.push(
    table(
      [
        'phase',
        'inst',
        'runs',
        'in flight',
        'runs/s',
        'iter/s',
        'iter P50',
        'iter P95',
        'iter P99',
        'run P50',
        `probe iter P50`,
        'probe iter P95',
        'probe iter P99',
        'load avg',
      ],
      r.phases.map((p) => [
        p.label,
        p.instancesPerStage,
        p.runs,
        p.concurrency,
        p.runsPerSecond,
        p.iterationsPerSecond,
        p.iterationMs.p50,
        p.iterationMs.p95,
        p.iterationMs.p99,
        p.runMs.p50,
        p.probe.iterationMs.p50,
        p.probe.iterationMs.p95,
        p.probe.iterationMs.p99,
        p.loadAverage.toFixed(2),
      ]),
    ),
  );
  lines.push(
    '(latencies in ms; "iter" = one Thought -> Action -> Observation -> Thought turn, from record timestamps; probe = ' +
      `${r.phases[0]?.probe.concurrency ?? '-'} runs in flight)`,
  );
  lines.push('');
  const hop = (p: PhaseResult, h: keyof PhaseResult['probe']['hopMs']) => p.probe.hopMs?.[h]?.p50 ?? Number.NaN;
  lines.push(
    table(
      ['phase', 'probe iter P50', 'request -> result (Action)', 'result -> verdicts (Observation)', 'verdicts -> next (Thought)'],
      r.phases.map((p) => [p.label, p.probe.iterationMs.p50, hop(p, 'action'), hop(p, 'observation'), hop(p, 'thought')]),
    ),
  );
  lines.push(
    "(the probe's iteration by hop, P50 ms: each hop is the wait for the previous record's transaction to commit and be fetched, plus the stage's work up to its send)",
  );
  lines.push('');
  lines.push(
    table(
      ['phase', 'stage', 'handle P50 ms', 'handle P99 ms', 'CPU ms/run', 'records/txn', 'RSS MiB'],
      r.phases.flatMap((p) =>
        Object.entries(p.stages).map(([s, v]) => [
          p.label,
          s,
          v.handleP50Ms ?? Number.NaN,
          v.handleP99Ms ?? Number.NaN,
          v.cpuMsPerRun,
          v.recordsPerTransaction ?? Number.NaN,
          v.rssMiB.join('/'),
        ]),
      ),
    ),
  );
  lines.push('');
  const others = r.phases.filter((p) => p.otherCpuMsPerRun);
  if (others.length) {
    const cell = (x: number | null | undefined) => (x == null ? '-' : x);
    lines.push(
      table(
        ['phase', 'stages CPU ms/run', 'broker', 'tool server', 'bench driver', 'all'],
        others.map((p) => {
          const o = p.otherCpuMsPerRun!;
          const stages = stageCpuMsPerRun(p);
          return [p.label, stages, cell(o.broker), cell(o.tools), o.driver, stages + (o.broker ?? 0) + (o.tools ?? 0) + o.driver];
        }),
      ),
    );
    lines.push(`(where the machine's ${m.cpus} cores went per run, over the throughput measurement; broker "-": not on this machine; the relay calls no tool)`);
    lines.push('');
  }
  if (r.ratios.length)
    lines.push(
      table(
        ['loop', 'relay ceiling', 'loop / ceiling (runs/s)', 'loop CPU per run / relay CPU per run'],
        r.ratios.map((x) => [x.loop, x.relay, x.ratio, x.cpuRatio]),
      ),
    );
  if (r.peer.length) {
    lines.push('');
    lines.push(
      table(
        ['peer phase', 'runs', 'in flight', 'runs/s', 'iter/run', 'runs completed', 'run P50', 'run P95', 'CPU ms/run (1 process)', 'RSS MiB', 'load avg'],
        r.peer.map((p) => [
          p.label,
          p.runs,
          p.concurrency,
          p.runsPerSecond,
          p.iterationsPerRun,
          p.completedRuns,
          p.runMs.p50,
          p.runMs.p95,
          p.cpuMsPerRun,
          p.rssMiB,
          p.loadAverage.toFixed(2),
        ]),
      ),
    );
    lines.push(
      '(LangGraph.js 1.7.3 + SqliteSaver (better-sqlite3, a WAL file), thought -> action -> observation, 3 iterations per run, the same demo tool server over HTTP at 0 ms: bench/peer/peer.mjs)',
    );
    if (r.peerRatios.length)
      lines.push(
        table(
          ['loop', 'peer', 'loop / peer (runs/s)'],
          r.peerRatios.map((x) => [x.loop, x.peer, x.ratio]),
        ),
      );
  }
  if (r.scaling.length) {
    lines.push('');
    lines.push(
      table(
        ['scaling phase', 'Action instances', 'cap per instance', 'runs/s', 'vs 1 instance', 'iter P50', 'Action handle P50 ms', 'load avg'],
        r.scaling.map((x) => {
          const p = r.phases.find((q) => q.label === x.label)!;
          return [
            x.label,
            x.actionInstances,
            p.actionConcurrency ?? Number.NaN,
            x.runsPerSecond,
            `${x.speedup.toFixed(2)}x`,
            p.iterationMs.p50,
            p.stages.action?.handleP50Ms ?? Number.NaN,
            p.loadAverage.toFixed(2),
          ];
        }),
      ),
    );
    lines.push(`(every tool call ${r.options.scalingLatencyMs} ms; Thought and Observation 1 instance each; same runs and in-flight count in each phase)`);
    const codes = [...new Set(r.scaling.map((x) => x.code))];
    if (codes.length > 1) {
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const counts = [...new Set(r.scaling.map((x) => x.actionInstances))];
      lines.push(
        table(
          ['code (means of its sets)', ...counts.flatMap((n) => [`x${n} runs/s`, `x${n} vs x${counts[0]}`])],
          codes.map((code) => [
            code,
            ...counts.flatMap((n) => {
              const rows = r.scaling.filter((x) => x.code === code && x.actionInstances === n);
              return [mean(rows.map((x) => x.runsPerSecond)), `${mean(rows.map((x) => x.speedup)).toFixed(2)}x`];
            }),
          ]),
        ),
      );
    }
  }
  const react = r.phases.filter((p) => p.model !== null);
  if (react.length) {
    lines.push('');
    lines.push(
      table(
        ['ReAct phase', 'model latency ms', 'in flight', 'runs/s', 'model turns/run', 'model turns/s', 'run P50', 'run P95', 'probe run P50'],
        react.map((p) => [
          p.label,
          p.model!.latencyMs,
          p.concurrency,
          p.runsPerSecond,
          p.model!.turnsPerRun,
          p.model!.turnsPerSecond,
          p.runMs.p50,
          p.runMs.p95,
          p.probe.runMs.p50,
        ]),
      ),
    );
    lines.push('(the model is the scripted simulator of model-sim/, not a model; a model turn = one committed model.chat step)');
  }
  if (r.ab) {
    const rows = (summary: Record<string, { a: number; b: number; change: number }>) =>
      Object.entries(summary).map(([k, v]) => [k, v.a, v.b, `${v.change >= 0 ? '+' : ''}${(100 * v.change).toFixed(1)}%`]);
    lines.push('');
    lines.push(`A/B of ${r.ab.versions} (ABBA order, means)`);
    const f = r.ab.featurizer;
    if (f) {
      const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
      lines.push(
        `featurizeSparse on the loop's ${f.bodies} response bodies, both versions in one process (3 alternating rounds): ${fmt(mean(f.aMicros))} -> ${fmt(mean(f.bMicros))} µs per call (${(100 * (mean(f.bMicros) / mean(f.aMicros) - 1)).toFixed(1)}%)`,
      );
    }
    lines.push(`Observation alone draining ${r.ab.drain.a[0]?.records ?? 0} action.results records of the loop:`);
    lines.push(table(['figure', 'A', 'B', 'change'], rows(r.ab.drain.summary)));
    lines.push(
      table(
        ['drain phase', 'CPU ms/record', 'records/s'],
        [...r.ab.drain.a, ...r.ab.drain.b].map((d) => [d.label, d.cpuMsPerRecord, d.recordsPerSecond]),
      ),
    );
    lines.push(
      `The whole loop (1 instance per stage, 0 ms tools; other stages share the cores, so expect noise)${r.ab.loop.skipped ? `: skipped (${r.ab.loop.skipped})` : ':'}`,
    );
    lines.push(table(['figure', 'A', 'B', 'change'], rows(r.ab.loop.summary)));
    lines.push(
      table(
        ['loop phase', 'runs/s', 'observation CPU ms/run'],
        [...r.ab.loop.a, ...r.ab.loop.b].map((p) => [p.label, p.runsPerSecond, p.stages.observation?.cpuMsPerRun ?? Number.NaN]),
      ),
    );
  }
  return lines.join('\n');
}

const USAGE = `usage: npm run bench -- [options]
  (the loop against the relay ceiling on KAFKA_BROKERS / SCHEMA_REGISTRY_URL; docs/BENCHMARKS.md)

  --out FILE                 also write the JSON report
  --quick                    smaller counts, for trying things out
  --runs N / --warmup N      measured runs / warm-up runs per phase (2000 / 2000: a steady state;
                             the scaling and model phases, bound by waiting, take at most 1000 / 100)
  --concurrency N            runs in flight in the headline phases (256)
  --probe-runs N             runs of the light-load latency probe (40), with
  --probe-concurrency N      runs in flight (4)
  --high N / --high-runs N   the headline pair again at N in flight (1024; 0: off), with this many runs (2000)
  --timeout-s N              give up a phase after N s without progress (120)
  --prime-runs N             runs of an unreported loop phase first, which warms a freshly started
                             broker, the tool server and the bench itself (4000; 0: none; not
                             with --ab-only)
  --ab A | A..B              also A/B two versions: commit A against the checkout as it is, or commit
                             A against commit B (any name git takes: HEAD~1, a sha, a tag; none by default)
  --no-ab | --ab-only        no A/B even with --ab | only the A/B of --ab (and the loop phase it needs)
  --ab-runs N                runs per A/B loop phase (2000: at 400 runs/s, 600 measured runs were 1.5 s)
  --budget-s N               time budget for the A/B phases (570)
  --model | --model-only     also | only the ReAct loop against the model simulator, 0 ms and
  --model-latency-ms N       N ms answers (300)
  --scaling | --scaling-only also | only Action with N ms tools at 1, 2, 3 instances:
  --scaling-latency-ms N     (300) and --scaling-instances 1,2,3; --scaling-only --ab A[..B] runs
                             them in ABBA sets of A and B
  --peer | --peer-only       also | only LangGraph.js + SQLite checkpointer on the same loop (bench/peer/)
  -h, --help                 this text`;

/**
 * The loop at the headline load for `runs` runs, reported nowhere. On a broker that had just
 * started (`tao infra up`, as docs/BENCHMARKS.md asks before a bench), the bench's first phase cost
 * the broker 2.5x its CPU per run of the same phase later in the run (4.9 against 2.0 ms; the
 * broker's JIT was compiling), and the tool server and this process were cold too. The first phase
 * is always the loop's, so ABBA could not cancel it, and it lowered every loop ÷ relay ratio.
 * Priming took most of it away (loop #1 ÷ loop #2 from 0.58 to 0.81-1.01); the rest is not
 * explained (NOTES.md lists it).
 */
async function primePhase(
  common: Omit<Parameters<typeof loopPhase>[0], 'label' | 'load' | 'instances' | 'toolLatencyMs'>,
  load: PhaseLoad,
  runs: number,
): Promise<void> {
  if (runs === 0) return;
  progress(common.started, `priming the broker, the tool server and this process: ${runs} loop runs, not reported`);
  await loopPhase({
    ...common,
    label: 'prime (not reported)',
    load: { ...load, warmupRuns: runs, runs: Math.min(load.runs, 200), probeRuns: 0 },
    instances: 1,
    toolLatencyMs: 0,
  });
}

/** Parses the command line into {@link BenchOptions} plus the report path; throws on a bad option. */
export function benchOptions(argv: string[]): BenchOptions & { out: string | null } {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      out: { type: 'string' },
      runs: { type: 'string' },
      warmup: { type: 'string' },
      concurrency: { type: 'string' },
      'probe-runs': { type: 'string' },
      'probe-concurrency': { type: 'string' },
      'ab-runs': { type: 'string' },
      'budget-s': { type: 'string' },
      ab: { type: 'string' },
      'no-ab': { type: 'boolean', default: false },
      'ab-only': { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      model: { type: 'boolean', default: false },
      'model-only': { type: 'boolean', default: false },
      'model-latency-ms': { type: 'string' },
      scaling: { type: 'boolean', default: false },
      'scaling-only': { type: 'boolean', default: false },
      'scaling-latency-ms': { type: 'string' },
      'scaling-instances': { type: 'string' },
      high: { type: 'string' },
      'timeout-s': { type: 'string' },
      peer: { type: 'boolean', default: false },
      'peer-only': { type: 'boolean', default: false },
      'high-runs': { type: 'string' },
      'prime-runs': { type: 'string' },
    },
  });
  if (values['ab-only'] && values.ab === undefined) throw new Error('--ab-only: name the versions to A/B with --ab A or --ab A..B (commits)');
  const quick = values.quick;
  const int = (v: string | undefined, fallback: number, name = 'the option') => {
    const n = v === undefined ? fallback : Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name}: expected a non-negative integer, got "${v}"`);
    return n;
  };
  // Steady state by default: 2,000 warm-up runs before each measurement. After 100, a phase measured
  // the JIT compiling the stages as much as the stages (28% of a stage's CPU on compiler threads),
  // and the loop, with more code to compile, more than the relay.
  const runs = int(values.runs, quick ? 300 : 2000, '--runs');
  return {
    out: values.out ?? null,
    load: {
      warmupRuns: int(values.warmup, quick ? 50 : 2000, '--warmup'),
      runs,
      concurrency: int(values.concurrency, quick ? 128 : 256, '--concurrency'),
      probeRuns: int(values['probe-runs'], quick ? 20 : 40, '--probe-runs'),
      probeConcurrency: int(values['probe-concurrency'], 4, '--probe-concurrency'),
      timeoutMs: 1000 * int(values['timeout-s'], 120, '--timeout-s'),
    },
    // An A/B needs its versions named; the model-only and peer-only modes run none.
    ab: values['no-ab'] || values['model-only'] || values['peer-only'] ? null : (values.ab ?? null),
    abRuns: int(values['ab-runs'], quick ? 300 : 2000, '--ab-runs'),
    budgetSeconds: int(values['budget-s'], 570, '--budget-s'),
    model: values['model-only'] ? 'only' : values.model ? 'also' : 'off',
    modelLatencyMs: int(values['model-latency-ms'], 300, '--model-latency-ms'),
    scaling: values['scaling-only'] ? 'only' : values.scaling ? 'also' : 'off',
    scalingLatencyMs: int(values['scaling-latency-ms'], 300, '--scaling-latency-ms'),
    scalingInstances: (values['scaling-instances'] ?? '1,2,3').split(',').map((x) => {
      const n = int(x.trim(), 1);
      if (n < 1) throw new Error(`--scaling-instances: expected counts of 1 or more, got "${x}"`);
      return n;
    }),
    high: { concurrency: int(values.high, quick ? 512 : 1024, '--high'), runs: int(values['high-runs'], quick ? 600 : 2000, '--high-runs') },
    peer: values['peer-only'] ? 'only' : values.peer ? 'also' : 'off',
    abOnly: values['ab-only'],
    primeRuns: int(values['prime-runs'], quick ? 300 : 4000, '--prime-runs'),
  };
}

/** Why the broker or the registry the bench would use cannot be reached, or null when both answer. */
async function infraProblem(): Promise<string | null> {
  const brokers = setting(process.env, 'KAFKA_BROKERS');
  const registry = setting(process.env, 'SCHEMA_REGISTRY_URL');
  const [kafka, schemas] = await Promise.all([
    kafkaHealth({ clientId: 'tao-bench-check', brokers, connectionTimeout: 2000 }, () => undefined),
    registryHealth(registry),
  ]);
  if (!kafka.ok) return `no Kafka broker answers at ${brokers.join(',')} (KAFKA_BROKERS): ${kafka.reason}`;
  if (!schemas.ok) return `no schema registry answers at ${registry} (SCHEMA_REGISTRY_URL): ${schemas.reason}`;
  return null;
}

async function main(): Promise<void> {
  quietOwnLogs();
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return;
  }
  let parsed: ReturnType<typeof benchOptions>;
  try {
    parsed = benchOptions(argv);
  } catch (err) {
    console.error(`bench: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const { out, ...options } = parsed;
  const unreachable = await infraProblem();
  if (unreachable) {
    console.error(`bench: ${unreachable}; start the local ones with \`npx tao infra up\` (docs/BENCHMARKS.md)`);
    process.exit(1);
  }
  const report = await runBench(options);
  console.log(renderReport(report));
  if (out) {
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    process.stderr.write(`report written to ${out}\n`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    () => process.exit(0),
    (err: Error) => {
      console.error(`bench: ${err.stack ?? err.message}`);
      process.exit(1);
    },
  );
}

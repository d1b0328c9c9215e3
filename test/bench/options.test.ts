/**
 * `npm run bench` options for the phases of issue 17 (scaling with slow tools, the peer, the pair
 * at 1,024 in flight) and how the report shows them. No broker: the report is made by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { benchOptions, pairRatios, renderReport, scalingRows, type BenchReport } from '../../bench/run.ts';
import type { PhaseResult } from '../../bench/lib/phases.ts';

test('the default bench also runs the headline pair at 1,024 in flight; --quick keeps it short', () => {
  const full = benchOptions([]);
  assert.deepEqual(full.high, { concurrency: 1024, runs: 2000 });
  assert.equal(full.scaling, 'off');
  assert.equal(full.peer, 'off');
  assert.deepEqual(benchOptions(['--quick']).high, { concurrency: 512, runs: 600 });
  assert.equal(benchOptions(['--high', '0']).high.concurrency, 0);
});

test('the default bench runs no A/B; --ab-only without versions says what it needs', () => {
  assert.equal(benchOptions([]).ab, null);
  assert.equal(benchOptions(['--ab', 'HEAD~1']).ab, 'HEAD~1');
  assert.equal(benchOptions(['--ab', 'v1..v2', '--no-ab']).ab, null);
  assert.throws(() => benchOptions(['--ab-only']), /--ab-only: name the versions to A\/B with --ab A or --ab A..B/);
});

test('the default bench measures a steady state: 2,000 warm-up runs, then 2,000 runs a phase', () => {
  const full = benchOptions([]);
  assert.equal(full.load.warmupRuns, 2000);
  assert.equal(full.load.runs, 2000);
  assert.equal(full.abRuns, 2000, 'an A/B loop phase as long as the others');
  assert.deepEqual([benchOptions(['--quick']).load.warmupRuns, benchOptions(['--quick']).load.runs], [50, 300]);
  assert.equal(benchOptions(['--warmup', '0']).load.warmupRuns, 0);
});

test('the default bench primes the broker with 4,000 unreported loop runs first; --prime-runs 0 does not', () => {
  assert.equal(benchOptions([]).primeRuns, 4000);
  assert.equal(benchOptions(['--quick']).primeRuns, 300);
  assert.equal(benchOptions(['--prime-runs', '0']).primeRuns, 0);
  assert.throws(() => benchOptions(['--prime-runs', 'many']), /--prime-runs: expected a non-negative integer, got "many"/);
});

test('--scaling-only and --peer-only run no A/B; instance counts are parsed and checked', () => {
  const s = benchOptions(['--scaling-only', '--scaling-instances', '1, 2,4']);
  assert.equal(s.scaling, 'only');
  assert.equal(s.ab, null);
  assert.deepEqual(s.scalingInstances, [1, 2, 4]);
  assert.equal(s.scalingLatencyMs, 300);
  assert.equal(benchOptions(['--peer-only']).ab, null);
  assert.equal(benchOptions(['--scaling-only', '--ab', 'HEAD~2']).ab, 'HEAD~2', 'scaling A/Bs the versions it is given');
  assert.equal(benchOptions(['--peer']).peer, 'also');
  assert.throws(() => benchOptions(['--scaling-instances', '1,0']), /--scaling-instances: expected counts of 1 or more, got "0"/);
  assert.throws(() => benchOptions(['--scaling-instances', '1,x']), /expected a non-negative integer, got "x"/);
});

function phase(label: string, runsPerSecond: number, actionInstances: number | null): PhaseResult {
  const pct = { n: 1, p50: 1, p95: 1, p99: 1, max: 1 };
  return {
    label,
    kind: 'loop',
    toolLatencyMs: 300,
    model: null,
    instancesPerStage: 1,
    actionInstances,
    actionConcurrency: 32,
    code: 'current',
    runs: 300,
    concurrency: 256,
    seconds: 10,
    runsPerSecond,
    iterationsPerSecond: 3 * runsPerSecond,
    iterationMs: pct,
    runMs: pct,
    probe: { concurrency: 4, iterationMs: pct, runMs: pct, hopMs: { action: pct, observation: pct, thought: pct } },
    stages: {},
    statuses: {},
    loadAverage: 1,
  };
}

test('the report shows runs/s against 1 Action instance, and loop ÷ peer', () => {
  const options = benchOptions(['--scaling-only']);
  const report: BenchReport = {
    startedAt: '2026-12-01T00:00:00.000Z',
    durationSeconds: 1,
    machine: { cpus: 2, cpuModel: 'x', memoryGiB: 1, node: 'v20', kafka: '3.9.1', brokers: 'b', loadAverageBefore: [1, 1, 1], loadAverageAfter: [1, 1, 1] },
    options,
    phases: [phase('loop 300ms action x1', 20, 1), phase('loop 300ms action x2', 38, 2)],
    ratios: [],
    ab: null,
    scaling: [
      { label: 'loop 300ms action x1', code: 'current', actionInstances: 1, runsPerSecond: 20, speedup: 1 },
      { label: 'loop 300ms action x2', code: 'current', actionInstances: 2, runsPerSecond: 38, speedup: 1.9 },
    ],
    peer: [
      {
        label: 'peer langgraph+sqlite',
        runs: 300,
        concurrency: 256,
        seconds: 5,
        runsPerSecond: 50,
        iterationsPerRun: 3,
        completedRuns: 300,
        runMs: { p50: 1, p95: 2, p99: 3 },
        cpuMsPerRun: 4,
        rssMiB: 100,
        loadAverage: 1,
      },
    ],
    peerRatios: [{ loop: 'loop 0ms x1', peer: 'peer langgraph+sqlite', ratio: 2.6 }],
  };
  const text = renderReport(report);
  assert.match(text, /loop 300ms action x2 +2 +32 +38 +1\.90x/);
  assert.match(text, /peer langgraph\+sqlite/);
  assert.match(text, /loop \/ peer/);
});

test('a scaling A/B reports each side against its own 1-instance phase, and the means per side', () => {
  const options = benchOptions(['--scaling-only', '--ab', 'HEAD~1']);
  const side = (code: string, x1: number, x2: number) => [
    { ...phase(`loop 300ms action x1 ${code}`, x1, 1), code },
    { ...phase(`loop 300ms action x2 ${code}`, x2, 2), code },
  ];
  const phases = [...side('A', 20, 30), ...side('B', 30, 60), ...side('B', 30, 54), ...side('A', 20, 34)];
  const report: BenchReport = {
    startedAt: '2026-12-01T00:00:00.000Z',
    durationSeconds: 1,
    machine: { cpus: 2, cpuModel: 'x', memoryGiB: 1, node: 'v20', kafka: '3.9.1', brokers: 'b', loadAverageBefore: [1, 1, 1], loadAverageAfter: [1, 1, 1] },
    options,
    phases,
    ratios: [],
    ab: null,
    peer: [],
    peerRatios: [],
    scaling: scalingRows(phases, 1),
  };
  const text = renderReport(report);
  assert.match(text, /^A +20 +1\.00x +32 +1\.60x/m, 'A: 30 and 34 against 20');
  assert.match(text, /^B +30 +1\.00x +57 +1\.90x/m, 'B: 60 and 54 against 30');
});

function withCpu(p: PhaseResult, stageCpuMsPerRun: number[]): PhaseResult {
  const stages = Object.fromEntries(
    stageCpuMsPerRun.map((cpuMsPerRun, i) => [`s${i}`, { handleP50Ms: null, handleP99Ms: null, rssMiB: [100], recordsPerTransaction: 10, cpuMsPerRun }]),
  );
  return { ...p, stages };
}

test('loop ÷ relay averages both phases of a pair, runs/s and CPU per run alike', () => {
  const phases = [
    withCpu(phase('loop 0ms x1 #1', 200, null), [2, 2, 2]), // the cold first phase of a bench
    withCpu(phase('relay x1 #1', 500, null), [1, 1, 1]),
    withCpu(phase('relay x1 #2', 700, null), [1, 0.5, 0.5]),
    withCpu(phase('loop 0ms x1 #2', 400, null), [1, 1, 1]),
  ];
  const [r] = pairRatios(phases, [['loop 0ms x1', 'relay x1']]);
  assert.equal(r!.ratio, 300 / 600);
  assert.equal(r!.cpuRatio, 4.5 / 2.5, 'the mean of 6 and 3 ms against the mean of 3 and 2');
});

test('the report says where the cores went per run: stages, broker, tool server, bench driver', () => {
  const loop = { ...withCpu(phase('loop 0ms x1 #1', 300, null), [1, 1.25, 1]), otherCpuMsPerRun: { broker: 1.5, tools: 0.25, driver: 0.5 } };
  const relay = {
    ...withCpu(phase('relay x1 #1', 600, null), [0.5, 0.5, 0.25]),
    kind: 'relay' as const,
    otherCpuMsPerRun: { broker: null, tools: null, driver: 0.25 },
  };
  const report: BenchReport = {
    startedAt: '2026-12-01T00:00:00.000Z',
    durationSeconds: 1,
    machine: { cpus: 2, cpuModel: 'x', memoryGiB: 1, node: 'v20', kafka: '3.9.1', brokers: 'b', loadAverageBefore: [1, 1, 1], loadAverageAfter: [1, 1, 1] },
    options: benchOptions([]),
    phases: [loop, relay],
    ratios: [],
    ab: null,
    peer: [],
    peerRatios: [],
    scaling: [],
  };
  const text = renderReport(report);
  assert.match(text, /^loop 0ms x1 #1 +3\.25 +1\.50 +0\.25 +0\.50 +5\.50 *$/m);
  assert.match(text, /^relay x1 #1 +1\.25 +- +- +0\.25 +1\.50 *$/m, 'no local broker, no tool: dashes, not zeros');
});

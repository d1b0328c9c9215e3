/**
 * Inference latency of the two text classifiers as the runtime calls them.
 *
 *   node --import tsx bench/models-latency.ts [--passes 5] [--warmup 200]
 *
 * For each model: warm-up calls first, then `passes` sequential passes over its eval.jsonl, timing every
 * single `ErrorClassifier.classify` / `IntentRouter.route` call (featurize + onnxruntime run + slot
 * extraction), plus the featurizer alone and worst-case inputs of the full 4096 code points. Wall-clock
 * times include the time the process waits for a core; on a shared, overloaded machine that dominates
 * the tail, so the main call is also measured in CPU time (process.cpuUsage: what the call costs, not when
 * it was scheduled), and the load averages before and after are recorded. When models/train.py has left
 * the dense-input twin of a model (`model-dense.onnx`, same weights, input `features` float32 [1, 16384]:
 * the graph before issue 17), the old call path (dense featurize + run) is timed in the same run, wall
 * and CPU, interleaved pass by pass with the sparse one so that both see the same load. Writes
 * models/latency-report.json and the latency section of each models/<task>/eval-report.md.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { ErrorClassifier } from '../processors/observation/classifier.ts';
import { IntentRouter } from '../processors/thought/planners/intent-model.ts';
import { commandOptions, integerOption } from './lib/command-line.ts';
import * as ort from 'onnxruntime-node';
import { FEATURE_DIMS, MAX_INPUT_CODE_POINTS, SESSION_OPTIONS, TextModel, featurize } from '../features/text/index.ts';

interface Stats {
  n: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  max_ms: number;
}

const USAGE = `usage: npm run models:bench -- [options]
  (inference latency of the two classifiers over their eval sets; writes models/latency-report.json
  and the latency section of each models/<task>/eval-report.md)

  --passes N               timed passes over each eval set (5)
  --warmup N               warm-up calls per model (200)
  -h, --help               this text`;
const values = commandOptions('models:bench', USAGE, { passes: { type: 'string', default: '5' }, warmup: { type: 'string', default: '200' } });
const PASSES = integerOption('models:bench', USAGE, values, 'passes', 1);
const WARMUP = integerOption('models:bench', USAGE, values, 'warmup', 0);
const here = new URL('../models/', import.meta.url);

function quantile(sorted: number[], q: number): number {
  // nearest-rank
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[idx]!;
}

function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    n: s.length,
    p50_ms: r(quantile(s, 0.5)),
    p99_ms: r(quantile(s, 0.99)),
    mean_ms: r(s.reduce((a, b) => a + b, 0) / s.length),
    max_ms: r(s[s.length - 1]!),
  };
}

async function time(texts: string[], passes: number, fn: (t: string) => unknown): Promise<Stats> {
  const samples: number[] = [];
  for (let p = 0; p < passes; p++) {
    for (const t of texts) {
      const t0 = performance.now();
      await fn(t);
      samples.push(performance.now() - t0);
    }
  }
  return stats(samples);
}

/** CPU time (user + system, all threads of this process) per call; microsecond resolution. */
async function cpuTime(texts: string[], passes: number, fn: (t: string) => unknown): Promise<Stats> {
  const samples: number[] = [];
  for (let p = 0; p < passes; p++) {
    for (const t of texts) {
      const c0 = process.cpuUsage();
      await fn(t);
      const c = process.cpuUsage(c0);
      samples.push((c.user + c.system) / 1000);
    }
  }
  return stats(samples);
}

function evalTexts(task: string): string[] {
  return readFileSync(new URL(`${task}/eval.jsonl`, here), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => (JSON.parse(l) as { text: string }).text);
}

function longTexts(seed: string[]): string[] {
  return seed.slice(0, 20).map((t) => {
    let s = t;
    while ([...s].length < MAX_INPUT_CODE_POINTS) s += '\n' + t;
    return s;
  });
}

async function warm(texts: string[], fn: (t: string) => unknown) {
  for (let i = 0; i < WARMUP; i++) await fn(texts[i % texts.length]!);
}

/** The call path before issue 17: a dense Float32Array per text into the dense twin. */
async function denseTwin(task: string): Promise<{ run: (t: string) => Promise<number>; session: ort.InferenceSession } | null> {
  const file = new URL(`${task}/model-dense.onnx`, here);
  if (!existsSync(file)) return null;
  // The product's session options (features/text/model.ts): only the call path differs.
  const session = await ort.InferenceSession.create(readFileSync(file), SESSION_OPTIONS);
  return {
    session,
    run: async (t: string) => {
      const out = await session.run({ features: new ort.Tensor('float32', featurize(t), [1, FEATURE_DIMS]) });
      return Float32Array.from(out['probabilities']!.data as Float32Array)[0]!;
    },
  };
}

/** Wall and CPU per call of `a` (after) and `b` (before), alternating whole passes A B B A ... */
async function abba(texts: string[], passes: number, a: (t: string) => unknown, b: (t: string) => unknown) {
  const wall: [number[], number[]] = [[], []];
  const cpu: [number[], number[]] = [[], []];
  for (let p = 0; p < passes * 2; p++) {
    const which = p % 4 === 0 || p % 4 === 3 ? 0 : 1;
    const fn = which === 0 ? a : b;
    for (const t of texts) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await fn(t);
      wall[which].push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu[which].push((c.user + c.system) / 1000);
    }
  }
  return { wall: wall.map(stats), cpu: cpu.map(stats) };
}

const clf = await ErrorClassifier.load();
const router = await IntentRouter.load();
const errTexts = evalTexts('error-classifier');
const intentTexts = evalTexts('intent-router');

await warm(errTexts, (t) => clf.classify(t));
await warm(intentTexts, (t) => router.route(t));

async function compare(texts: string[], task: string, dense: Awaited<ReturnType<typeof denseTwin>>): Promise<Record<string, Stats>> {
  if (!dense) return {};
  // Like for like: TextModel.predict (sparse featurize + typed arrays + run + copy of the probabilities)
  // against the old predict's body (dense featurize + run + copy), same weights, same texts.
  const model = await TextModel.load(fileURLToPath(new URL(`${task}/`, here)));
  await warm(texts, (t) => model.predict([t]));
  const r = await abba(
    texts,
    PASSES,
    (t) => model.predict([t]),
    (t) => dense.run(t),
  );
  await model.close();
  return {
    'model call, sparse input (A/B)': r.wall[0]!,
    'model call, dense input before issue 17 (A/B)': r.wall[1]!,
    'model call, sparse input (A/B), CPU time': r.cpu[0]!,
    'model call, dense input before issue 17 (A/B), CPU time': r.cpu[1]!,
  };
}

const errDense = await denseTwin('error-classifier');
const intentDense = await denseTwin('intent-router');
if (errDense) await warm(errTexts, (t) => errDense.run(t));
if (intentDense) await warm(intentTexts, (t) => intentDense.run(t));

const loadBefore = loadavg().map((x) => Math.round(x * 100) / 100);
const errLong = longTexts(errTexts);
const intentLong = longTexts(intentTexts);
const report = {
  measured_at: new Date().toISOString(),
  method: `sequential single calls after ${WARMUP} warm-up calls; ${PASSES} passes over eval.jsonl; nearest-rank percentiles; performance.now()`,
  machine: {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? '?',
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    load_average_1_5_15_before: loadBefore,
    load_average_1_5_15_after: [] as number[],
  },
  tasks: {
    'error-classifier': {
      model: clf.modelId,
      calls: {
        classify: await time(errTexts, PASSES, (t) => clf.classify(t)),
        'classify, CPU time': await cpuTime(errTexts, PASSES, (t) => clf.classify(t)),
        ...(await compare(errTexts, 'error-classifier', errDense)),
        'featurize only': await time(errTexts, PASSES, (t) => featurize(t)),
        [`classify, ${MAX_INPUT_CODE_POINTS} code points`]: await time(errLong, PASSES, (t) => clf.classify(t)),
        'classifyBatch(32), per text': await (async () => {
          const samples: number[] = [];
          for (let p = 0; p < PASSES; p++) {
            for (let i = 0; i + 32 <= errTexts.length; i += 32) {
              const t0 = performance.now();
              await clf.classifyBatch(errTexts.slice(i, i + 32));
              samples.push((performance.now() - t0) / 32);
            }
          }
          return stats(samples);
        })(),
      },
    },
    'intent-router': {
      model: router.modelId,
      calls: {
        route: await time(intentTexts, PASSES, (t) => router.route(t)),
        'route, CPU time': await cpuTime(intentTexts, PASSES, (t) => router.route(t)),
        ...(await compare(intentTexts, 'intent-router', intentDense)),
        'featurize only': await time(intentTexts, PASSES, (t) => featurize(t)),
        [`route, ${MAX_INPUT_CODE_POINTS} code points`]: await time(intentLong, PASSES, (t) => router.route(t)),
      },
    },
  },
};
report.machine.load_average_1_5_15_after = loadavg().map((x) => Math.round(x * 100) / 100);
await clf.close();
await router.close();
await errDense?.session.release();
await intentDense?.session.release();

writeFileSync(new URL('latency-report.json', here), JSON.stringify(report, null, 2) + '\n');

for (const [task, t] of Object.entries(report.tasks)) {
  const mdUrl = new URL(`${task}/eval-report.md`, here);
  const md = readFileSync(mdUrl, 'utf8');
  const lines = [
    '<!-- latency:start -->',
    '## Inference latency (Node, onnxruntime-node, CPU, 1 thread)',
    '',
    `From \`models/latency-report.json\` (${report.measured_at}, ${report.machine.cpus} × ${report.machine.cpu_model}, Node ${report.machine.node}, model \`${t.model}\`), per call over the eval set after warm-up. Load average (1/5/15 min) ${report.machine.load_average_1_5_15_before.join(' / ')} before, ${report.machine.load_average_1_5_15_after.join(' / ')} after: wall-clock tails include waiting for a core; \`CPU time\` rows are what a call costs (process.cpuUsage, µs resolution).`,
    '',
    '| call | calls | P50 ms | P99 ms | mean ms | max ms |',
    '|---|---:|---:|---:|---:|---:|',
    ...Object.entries(t.calls).map(
      ([name, s]) => `| \`${name}\` | ${s.n} | ${s.p50_ms.toFixed(3)} | ${s.p99_ms.toFixed(3)} | ${s.mean_ms.toFixed(3)} | ${s.max_ms.toFixed(3)} |`,
    ),
    '<!-- latency:end -->',
  ];
  const start = md.indexOf('<!-- latency:start -->');
  const end = md.indexOf('<!-- latency:end -->');
  if (start >= 0 && end > start) writeFileSync(mdUrl, md.slice(0, start) + lines.join('\n') + md.slice(end + '<!-- latency:end -->'.length));
}

for (const [task, t] of Object.entries(report.tasks)) {
  for (const [name, s] of Object.entries(t.calls))
    console.log(`${task.padEnd(17)} ${name.padEnd(32)} n=${String(s.n).padStart(4)}  P50 ${s.p50_ms.toFixed(3)} ms  P99 ${s.p99_ms.toFixed(3)} ms`);
}
console.log('wrote models/latency-report.json and the latency sections of models/*/eval-report.md');

/**
 * The fault mix: the loop against a tool server that fails 20% of calls with a timeout, 10% with a
 * truncated (malformed) JSON body, 5% with a 503 and 2% with a 429, while every tool has a breaker
 * and a fallback tool on a healthy replica server. Reports how many runs still complete, and how
 * many of those that met a failure recovered without a person.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ActionResult, ObservationResult } from '../../schemas/types.gen.ts';
import { DEAD_LETTERED } from '../../topics/catalog.ts';
import { Fleet, REPO_ROOT, freshNamespace, progress, type ToolServerProcess } from './harness.ts';
import { closedLoop, connectProducer, loopTarget, readLog } from './load.ts';
import { decodeLoopRecords, duplicatedSteps, loopTopicNames, runRates, type RunRates } from './loop-log.ts';
import { deleteNamespace, startStages } from './phases.ts';
import { summary } from './stats.ts';

/** Share of all tool calls each fault hits (the spec's mix). */
export const FAULT_MIX = { timeout: 0.2, malformed: 0.1, server_error: 0.05, rate_limit: 0.02 } as const;

/** Per-attempt timeout of every tool in the fault-mix catalog (the demo catalog's is 2000 ms). */
export const FAULT_MIX_TIMEOUT_MS = 500;

/**
 * The fault specs for the primary tool server. Faults are tried in order and the first that fires
 * wins, later ones seeing only the calls left over, so each rate is scaled to its share of those.
 */
export function faultMixSpecs(): Array<Record<string, unknown>> {
  let left = 1;
  const specs: Array<Record<string, unknown>> = [];
  const add = (mode: keyof typeof FAULT_MIX, extra: Record<string, unknown> = {}) => {
    specs.push({ route: '*', mode, rate: FAULT_MIX[mode] / left, ...extra });
    left -= FAULT_MIX[mode];
  };
  add('timeout', { delayMs: 10 * FAULT_MIX_TIMEOUT_MS });
  add('malformed');
  add('server_error');
  add('rate_limit', { retryAfterSeconds: 1 });
  return specs;
}

/**
 * Writes the fault-mix catalog to `dir`: every demo tool with a short timeout, a breaker and a
 * fallback `<name>_replica`, the same tool served from `${TAO_TEST_FALLBACK_TOOL_ORIGIN}`.
 */
export function writeFaultMixCatalog(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const source = join(REPO_ROOT, 'tools/catalog');
  for (const file of readdirSync(source).filter((f) => f.endsWith('.json') && !f.endsWith('.openapi.json'))) {
    const spec = JSON.parse(readFileSync(join(source, file), 'utf8')) as Record<string, unknown> & { name: string; retry: Record<string, unknown> };
    const { fallbackTool: _fallback, breaker: _breaker, ...base } = spec;
    const primary = {
      ...base,
      timeoutMs: FAULT_MIX_TIMEOUT_MS,
      retry: { ...spec.retry, maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 500 },
      breaker: { failureThreshold: 5, coolDownMs: 2000 },
      fallbackTool: `${spec.name}_replica`,
    };
    const replica = {
      ...base,
      name: `${spec.name}_replica`,
      description: `Replica of ${spec.name} (its fallback).`,
      origin: '${TAO_TEST_FALLBACK_TOOL_ORIGIN}',
      timeoutMs: FAULT_MIX_TIMEOUT_MS,
    };
    writeFileSync(join(dir, file), JSON.stringify(primary, null, 2));
    writeFileSync(join(dir, `${spec.name}_replica.json`), JSON.stringify(replica, null, 2));
  }
}

/** What the fault-mix run found. */
export interface FaultMixReport {
  namespace: string;
  runs: number;
  faults: Array<{ mode: string; shareOfCalls: number; applied: number }>;
  toolCalls: { primary: number; replica: number };
  rates: RunRates;
  steps: { results: number; retried: number; servedByFallback: number; invalidVerdicts: Record<string, number> };
  duplicatedSteps: number;
  deadLetters: Record<string, number>;
  runMs: ReturnType<typeof summary>;
  durationSeconds: number;
}

/** Runs `runs` runs of the order-status flow through the fault mix. */
export async function runFaultMix(options: {
  runs: number;
  concurrency: number;
  env: NodeJS.ProcessEnv;
  primary: ToolServerProcess;
  replica: ToolServerProcess;
  catalogDir: string;
  timeoutMs: number;
  log?: (line: string) => void;
}): Promise<FaultMixReport> {
  const started = Date.now();
  const log = options.log ?? ((line: string) => progress(started, line));
  writeFaultMixCatalog(options.catalogDir);
  await options.primary.setFaults(faultMixSpecs());
  await options.replica.clearFaults();
  const before = { primary: (await options.primary.stats()).total, replica: (await options.replica.stats()).total };
  const ns = await freshNamespace('faultmix', options.env, {
    TAO_TOOL_CATALOG_DIR: options.catalogDir,
    TAO_DEMO_TOOL_ORIGIN: options.primary.url,
    TAO_TEST_FALLBACK_TOOL_ORIGIN: options.replica.url,
  });
  const fleet = new Fleet();
  try {
    log(`fault mix: ${options.runs} runs, ${options.concurrency} in flight, in ${ns.namespace}`);
    await startStages(fleet, ns.env, 1);
    const producer = await connectProducer(ns.kafka);
    let result;
    try {
      result = await closedLoop(
        loopTarget(ns, producer, (i) => `order status for faultmix${i}@example.com`),
        {
          runs: options.runs,
          concurrency: options.concurrency,
          timeoutMs: options.timeoutMs,
          onProgress: (n) => log(`fault mix: ${n}/${options.runs} runs ended`),
        },
      );
    } finally {
      await producer.disconnect();
    }
    const applied = await options.primary.faults();
    await options.primary.clearFaults();
    const raw = await readLog(ns.kafka, [...loopTopicNames(ns), ...DEAD_LETTERED.map((id) => ns.codec.topics.dlq(id))]);
    const records = await decodeLoopRecords(
      ns,
      raw.filter((r) => !r.topic.endsWith('.dlq')),
    );
    const ids = new Set(result.ids);
    const steps = { results: 0, retried: 0, servedByFallback: 0, invalidVerdicts: {} as Record<string, number> };
    for (const r of records) {
      if (!r.decoded || !ids.has(r.key)) continue;
      if (r.id === 'actionResults') {
        for (const s of (r.decoded as unknown as ActionResult).results) {
          steps.results++;
          if (s.attempts > 1) steps.retried++;
          if (s.fallback_from) steps.servedByFallback++;
        }
      } else if (r.id === 'observationResults') {
        for (const v of (r.decoded as unknown as ObservationResult).verdicts)
          if (!v.valid) steps.invalidVerdicts[v.error_type] = (steps.invalidVerdicts[v.error_type] ?? 0) + 1;
      }
    }
    const taskTimes = new Map(records.filter((r) => r.id === 'tasks').map((r) => [r.key, r.timestamp]));
    const after = { primary: (await options.primary.stats()).total, replica: (await options.replica.stats()).total };
    return {
      namespace: ns.namespace,
      runs: result.ids.length,
      faults: applied.map((f) => ({ mode: String(f.spec.mode), shareOfCalls: FAULT_MIX[f.spec.mode as keyof typeof FAULT_MIX], applied: f.applied })),
      toolCalls: { primary: after.primary - before.primary, replica: after.replica - before.replica },
      rates: runRates(records, ids),
      steps,
      duplicatedSteps: duplicatedSteps(records).steps.length,
      deadLetters: Object.fromEntries(DEAD_LETTERED.map((id) => [ns.codec.topics.dlq(id), raw.filter((r) => r.topic === ns.codec.topics.dlq(id)).length])),
      runMs: summary(records.filter((r) => r.id === 'outcomes' && ids.has(r.key)).map((r) => r.timestamp - (taskTimes.get(r.key) ?? r.timestamp))),
      durationSeconds: (Date.now() - started) / 1000,
    };
  } finally {
    await fleet.stop();
    await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns.namespace}.`));
    rmSync(options.catalogDir, { recursive: true, force: true });
  }
}

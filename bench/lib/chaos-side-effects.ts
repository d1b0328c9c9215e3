/**
 * Side effects under chaos: the chaos runs refund their order (a call with side effects), the tool
 * server answers a share of those refunds late on every attempt Action makes (applied at once,
 * answered after the call's time-out), so Thought retries them in a later wave, and the refunds the
 * tool server applied are counted by `Idempotency-Key`. A run with more than one refund applied
 * (under one key, or under several: a retry sent under a new key) is a side effect applied twice.
 */
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ThoughtRequest } from '../../schemas/types.gen.ts';
import { REPO_ROOT } from './harness.ts';

/** The chaos runs' flow (TAO_FLOW): order-status, then a 1-cent refund of the latest order once it has shipped. */
export const CHAOS_FLOW = 'order-status-refund@1';

/** The side-effecting tool of the chaos flow. */
export const REFUND_TOOL = 'refunds.create';

/**
 * The slow answers: a quarter of the refund calls are answered after the time-out on each of
 * Action's attempts (the tool's `retry.maxAttempts`), so Action gives the call up and Thought
 * retries it; the retry is answered at once.
 */
export function slowRefundFault(): Record<string, unknown> {
  const spec = JSON.parse(readFileSync(join(REPO_ROOT, 'tools/catalog', `${REFUND_TOOL}.json`), 'utf8')) as {
    timeoutMs: number;
    retry: { maxAttempts: number };
  };
  return { route: REFUND_TOOL, mode: 'timeout', delayMs: spec.timeoutMs + 500, perKey: spec.retry.maxAttempts, rate: 0.25 };
}

/**
 * Writes a flows folder for TAO_FLOWS_DIR: the shipped flows and the routing table, and the chaos
 * flow (order-status with a refund step `R`: 1 cent, so that a second refund of the same order
 * would be applied too, not refused as over the refundable amount).
 */
export function writeChaosFlows(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const source = join(REPO_ROOT, 'flows');
  for (const file of readdirSync(source).filter((f) => f.endsWith('.json'))) copyFileSync(join(source, file), join(dir, file));
  const flow = JSON.parse(readFileSync(join(source, 'order-status.v1.json'), 'utf8')) as {
    id: string;
    description: string;
    nodes: Array<Record<string, unknown>>;
    edges: Array<Record<string, unknown>>;
  };
  const [id, version] = CHAOS_FLOW.split('@') as [string, string];
  const chaos = {
    ...flow,
    id,
    version: Number(version),
    description: `${flow.description} Then a 1-cent refund of that order once it has shipped (npm run chaos: a call with side effects).`,
    nodes: [...flow.nodes, { id: 'R', tool: REFUND_TOOL, input: { order_id: '{{S2.order_id}}', amount_cents: 1 } }],
    edges: [...flow.edges, { from: 'S2', to: 'R', when: { path: '/status', in: ['shipped', 'delivered'] } }],
  };
  writeFileSync(join(dir, `${id}.v${version}.json`), JSON.stringify(chaos, null, 2));
}

/** What the tool server applied, counted by key, and how the runs got there. */
export interface SideEffects {
  /** Refunds (side effects) the tool server applied for the chaos runs. */
  applied: number;
  /** Chaos runs with a refund applied. */
  runsWithEffect: number;
  /** Refund calls Thought sent again in a later wave (after Action gave the call up). */
  retriedByThought: number;
  /** Runs whose refund was applied more than once, with the keys and counts: none expected. */
  appliedTwice: string[];
}

/**
 * Counts the side effects of the runs `ids` from the tool server's effects per key (every key
 * starts with its run's thought_id) and the committed waves.
 */
export function sideEffectsOf(effectsByKey: Record<string, number>, waves: readonly ThoughtRequest[], ids: ReadonlySet<string>): SideEffects {
  const byRun = new Map<string, Array<[string, number]>>();
  for (const [key, n] of Object.entries(effectsByKey)) {
    const run = key.slice(0, key.indexOf(':'));
    if (!ids.has(run)) continue;
    byRun.set(run, [...(byRun.get(run) ?? []), [key, n]]);
  }
  const runs = [...byRun.entries()];
  return {
    applied: runs.reduce((a, [, keys]) => a + keys.reduce((b, [, n]) => b + n, 0), 0),
    runsWithEffect: runs.length,
    retriedByThought: waves.filter((w) => ids.has(w.thought_id)).flatMap((w) => w.steps.filter((s) => s.tool === REFUND_TOOL && s.attempt > 1)).length,
    appliedTwice: runs
      .filter(([, keys]) => keys.reduce((b, [, n]) => b + n, 0) > 1)
      .map(([run, keys]) => `${run}: ${keys.map(([k, n]) => `${k} x${n}`).join(', ')}`),
  };
}

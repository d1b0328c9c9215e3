/** Drives the Action stage directly: writes thought.requests records and waits for their committed results. */
import { randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { watchRecords, type LoopRecord } from '../../client/watch.ts';
import type { ActionResult, ObservationResult, RunState, StepCall, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { TestCluster } from './cluster.ts';
import { runState } from '../../schemas/records.ts';

export interface WaveStep {
  step_id?: string;
  tool: string;
  input: unknown;
  /** JSON Schema the plan expects of the step's data (Observation's consistency check). */
  expect?: Record<string, unknown>;
}

export class WaveProbe {
  private readonly results = new Map<string, LoopRecord[]>();
  private readonly waiters: Array<() => void> = [];

  private constructor(
    private readonly cluster: TestCluster,
    private readonly producer: Producer,
    private readonly stop: () => Promise<void>,
  ) {}

  static async start(cluster: TestCluster): Promise<WaveProbe> {
    let probe: WaveProbe | null = null;
    const pending: LoopRecord[] = [];
    const watcher = await watchRecords(cluster.kafka, cluster.codec, {
      topics: ['actionResults', 'observationResults'],
      from: 'end',
      onRecord: (r) => (probe ? probe.add(r) : pending.push(r)),
    });
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    probe = new WaveProbe(cluster, producer, async () => {
      await producer.disconnect();
      await watcher.stop();
    });
    for (const r of pending) probe.add(r);
    return probe;
  }

  /** Builds a one-wave request for `steps` (a plan of independent steps) under a new thought_id. */
  request(steps: WaveStep[], thoughtId = `wave-${randomUUID()}`): ThoughtRequest {
    const ids = steps.map((s, i) => s.step_id ?? `S${i + 1}`);
    const plan = {
      flow: { id: 'test', version: 1 },
      steps: steps.map((s, i) => ({ id: ids[i], tool: s.tool, input: s.input, depends_on: [], ...(s.expect ? { expect: s.expect } : {}) })),
      output: {},
    };
    const run: RunState = runState({ plan_json: JSON.stringify(plan), step_attempts: Object.fromEntries(ids.map((id) => [id, 1])) });
    const calls: StepCall[] = steps.map((s, i) => ({
      step_id: ids[i]!,
      tool: s.tool,
      input_json: JSON.stringify(s.input),
      idempotency_key: `${thoughtId}:1:${ids[i]}`,
      attempt: 1,
    }));
    return { thought_id: thoughtId, iteration: 1, run, steps: calls };
  }

  async send(...requests: ThoughtRequest[]): Promise<void> {
    const messages = [];
    for (const r of requests) messages.push({ key: r.thought_id, value: await this.cluster.codec.encode('thoughtRequests', r) });
    await this.producer.send({ topic: this.cluster.codec.topics.name('thoughtRequests'), acks: -1, messages });
  }

  /** Sends one wave and resolves with its committed action result. */
  async run(steps: WaveStep[], timeoutMs = 30000): Promise<ActionResult> {
    const request = this.request(steps);
    await this.send(request);
    return this.actionResult(request.thought_id, timeoutMs);
  }

  actionResult(thoughtId: string, timeoutMs = 30000): Promise<ActionResult> {
    return this.waitFor(thoughtId, 'actionResults', timeoutMs) as Promise<ActionResult>;
  }

  observation(thoughtId: string, timeoutMs = 30000): Promise<ObservationResult> {
    return this.waitFor(thoughtId, 'observationResults', timeoutMs) as Promise<ObservationResult>;
  }

  /** Every committed action result seen for `thoughtId` so far. */
  actionResults(thoughtId: string): ActionResult[] {
    return (this.results.get(thoughtId) ?? []).filter((r) => r.topic === 'actionResults').map((r) => r.value as unknown as ActionResult);
  }

  close(): Promise<void> {
    return this.stop();
  }

  private add(r: LoopRecord): void {
    this.results.set(r.key, [...(this.results.get(r.key) ?? []), r]);
    for (const w of this.waiters.splice(0)) w();
  }

  private async waitFor(thoughtId: string, topic: 'actionResults' | 'observationResults', timeoutMs: number): Promise<unknown> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.results.get(thoughtId)?.find((r) => r.topic === topic);
      if (hit) return hit.value;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${topic} record for ${thoughtId} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
  }
}

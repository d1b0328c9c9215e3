/**
 * `tao tail`: the loop as it runs. Follows the loop topics from their current end (read_committed,
 * so only what the stages committed), prints a line per record (a line per step for tool results
 * and verdicts) and, every few seconds, a progress summary.
 */
import type { Kafka } from 'kafkajs';
import { describeRecord } from './render.ts';
import { watchRecords, type LoopRecord } from '../client/watch.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { ConfigError } from '../runtime/errors.ts';
import type { ActionResult, Outcome, Task } from '../schemas/types.gen.ts';
import type { TopicId } from '../topics/catalog.ts';
import { missingTopics } from '../runtime/follow.ts';

/** The topics `tail` follows (thought.runs is Thought's store, and its records repeat these). */
export const TAIL_TOPICS: readonly TopicId[] = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'];

export interface TailOptions {
  /** Only this run: a thought_id, or a prefix of one (the 8 characters the lines show are enough). */
  thought?: string;
  /** Milliseconds between summary lines; 0 for none. */
  summaryEveryMs: number;
  write(line: string): void;
  /** For tests and scripts: the clock the summary's rates use. */
  now?: () => number;
}

/** Counts since `tail` started (the summary line). */
export interface TailCounts {
  started: number;
  replies: number;
  ended: Record<string, number>;
  waves: number;
  steps: number;
  stepErrors: number;
  undecodable: number;
}

/**
 * Starts following; resolves once positioned at the end of every topic, so every record committed
 * afterwards is shown. `stop()` prints a last summary and disconnects.
 */
export async function startTail(kafka: Kafka, codec: AvroCodec, options: TailOptions): Promise<{ counts: TailCounts; stop(): Promise<void> }> {
  const now = options.now ?? (() => Date.now());
  const counts: TailCounts = { started: 0, replies: 0, ended: {}, waves: 0, steps: 0, stepErrors: 0, undecodable: 0 };
  const startedAt = now();
  let last = { at: startedAt, steps: 0 };
  const matches = (key: string) => !options.thought || key.startsWith(options.thought);

  const onRecord = (r: LoopRecord) => {
    if (!matches(r.key)) return;
    count(counts, r);
    for (const line of describeRecord(r)) options.write(line);
  };
  const missing = await missingTopics(
    kafka,
    TAIL_TOPICS.map((t) => codec.topics.name(t)),
  );
  if (missing.length)
    throw new ConfigError(
      `cannot tail: the cluster has no topic ${missing.join(', ')} (namespace "${codec.topics.namespace}"; \`tao topics apply\` creates them)`,
    );
  const watcher = await watchRecords(kafka, codec, {
    topics: [...TAIL_TOPICS],
    from: 'end',
    onRecord,
    onError: (err, where) => {
      counts.undecodable++;
      // Whose record it was is unknown (the key comes with the value), so a filtered tail only counts it.
      if (!options.thought) options.write(`! skipped an undecodable record at ${where.topic}/${where.partition}@${where.offset}: ${err.message}`);
    },
  });
  const summary = () => {
    const t = now();
    const seconds = Math.max(0.001, (t - last.at) / 1000);
    options.write(summaryLine(counts, (t - startedAt) / 1000, (counts.steps - last.steps) / seconds));
    last = { at: t, steps: counts.steps };
  };
  const timer = options.summaryEveryMs > 0 ? setInterval(summary, options.summaryEveryMs) : null;
  return {
    counts,
    stop: async () => {
      if (timer) clearInterval(timer);
      await watcher.stop();
      summary();
    },
  };
}

function count(counts: TailCounts, r: LoopRecord): void {
  switch (r.topic) {
    case 'tasks':
      if ((r.value as unknown as Task).kind === 'REPLY') counts.replies++;
      else counts.started++;
      break;
    case 'thoughtRequests':
      counts.waves++;
      break;
    case 'actionResults':
      for (const s of (r.value as unknown as ActionResult).results) {
        counts.steps++;
        if (s.error) counts.stepErrors++;
      }
      break;
    case 'outcomes': {
      const status = (r.value as unknown as Outcome).status;
      counts.ended[status] = (counts.ended[status] ?? 0) + 1;
      break;
    }
    default:
      break;
  }
}

/** `-- 12s | runs started 40, completed 30, ... | waves 80 | steps 120 (9.5/s), 7 with errors`. */
export function summaryLine(counts: TailCounts, elapsedSeconds: number, stepsPerSecond: number): string {
  const e = (s: string) => counts.ended[s] ?? 0;
  const runs = [
    `started ${counts.started}`,
    `completed ${e('completed')}`,
    `failed ${e('failed')}`,
    `escalated ${e('escalated')}`,
    `awaiting input ${e('awaiting_input')}`,
    `awaiting approval ${e('awaiting_approval')}`,
    `budget exhausted ${e('budget_exhausted')}`,
    `expired ${e('expired')}`,
  ];
  if (e('cancelled')) runs.push(`cancelled ${e('cancelled')}`);
  if (counts.replies) runs.push(`replies ${counts.replies}`);
  const extra = counts.undecodable ? ` | undecodable ${counts.undecodable}` : '';
  return `-- ${Math.round(elapsedSeconds)}s | runs ${runs.join(', ')} | waves ${counts.waves} | steps ${counts.steps} (${stepsPerSecond.toFixed(1)}/s), ${counts.stepErrors} with errors${extra}`;
}

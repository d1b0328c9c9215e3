/**
 * Feeds the console's {@link RunIndex} from the log: one read_committed consumer in a throw-away
 * group (nothing committed) follows the loop topics from their beginning, so the index is rebuilt
 * at every start, then stays live. Every change is announced to the subscribers (the server's
 * server-sent events), coalesced per run over `coalesceMs` so a burst of records is one event.
 */
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { errorMessage } from '../runtime/errors.ts';
import { followFromBeginning, type Follower } from '../runtime/follow.ts';
import type { Logger } from '../runtime/log.ts';
import { stringHeaders } from '../runtime/log-reader.ts';
import type { TopicId } from '../topics/catalog.ts';
import { RunIndex, type RunSummary } from './run-index.ts';

/** The topics the index is folded from. */
export const FEED_TOPICS = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'] as const satisfies readonly TopicId[];

/** A change of one run's summary (null summary: unknown, never sent). */
export type RunChange = RunSummary;

/** The index, kept current from the log. */
export interface Feed {
  readonly index: RunIndex;
  /** Resolves when the index holds every record committed before the feed started. */
  readonly ready: Promise<void>;
  /** Milliseconds the rebuild took; null until ready. */
  readonly rebuildMs: number | null;
  /** Calls `listener` with each changed run (after the rebuild: live changes only). Returns the unsubscribe function. */
  subscribe(listener: (changes: RunChange[]) => void): () => void;
  /** Why the feed stopped following the log (the index is no longer live), or null while it follows. */
  readonly stopped: string | null;
  stop(): Promise<void>;
}

export interface FeedDeps {
  kafka: Kafka;
  codec: AvroCodec;
  logger: Logger;
  /** How long changes are gathered before one event (default 200 ms). */
  coalesceMs?: number;
  now?: () => number;
}

/** Starts following; the returned feed's `ready` says when the rebuild is done (also logged with its duration). */
export async function startFeed(deps: FeedDeps): Promise<Feed> {
  const { codec, logger } = deps;
  const now = deps.now ?? Date.now;
  const index = new RunIndex();
  const listeners = new Set<(changes: RunChange[]) => void>();
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let isReady = false;
  let rebuildMs: number | null = null;
  let stopped: string | null = null;
  const flush = () => {
    timer = null;
    const changes = [...pending].map((id) => index.get(id)).filter((s): s is RunSummary => s !== null);
    pending.clear();
    for (const l of listeners) l(changes);
  };
  const byName = new Map<string, (typeof FEED_TOPICS)[number]>(FEED_TOPICS.map((id) => [codec.topics.name(id), id]));
  const started = now();
  const follower: Follower = await followFromBeginning(deps.kafka, [...byName.keys()], {
    groupPrefix: codec.topics.group('console'),
    // The rebuild reads every retained record; smaller fetches keep the process's peak memory down.
    fetchMaxBytes: 1048576,
    onStopped: (err) => {
      stopped = err.message;
      logger.error('console feed stopped: the index is no longer live (restart tao ui)', { error: err.message });
    },
    onMessage: async (topic, partition, message) => {
      const id = byName.get(topic)!;
      if (message.value === null) return;
      let value: unknown;
      try {
        value = await codec.decode(id, message.value);
      } catch (err) {
        // The stage that reads it dead-letters it; the dead-letters page shows it.
        logger.warn('record undecodable; not indexed', { topic, partition, offset: message.offset, error: errorMessage(err) });
        return;
      }
      const changed = index.apply(id, value, Number(message.timestamp), stringHeaders(message.headers));
      if (changed === null || !isReady) return;
      pending.add(changed);
      timer ??= setTimeout(flush, deps.coalesceMs ?? 200);
    },
  });
  const ready = follower.reachedEnd.then(() => {
    isReady = true;
    rebuildMs = now() - started;
    logger.info('console index rebuilt from the log', { ms: rebuildMs, runs: index.size, records: index.records });
  });
  ready.catch(() => undefined);
  return {
    index,
    ready,
    get rebuildMs() {
      return rebuildMs;
    },
    get stopped() {
      return stopped;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      if (timer) clearTimeout(timer);
      await follower.stop();
    },
  };
}

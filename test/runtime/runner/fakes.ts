/**
 * Fakes of what a StageRunner talks to, for unit tests of its batch logic without a broker (in the
 * manner of kafkajs's own runner.spec.js): a consumer whose `eachBatch` the test calls with a batch
 * it makes, transactional producers, an admin that reads the committed offsets, and a codec that
 * reads JSON. Every call that matters to exactly-once goes to one log, in order:
 *
 *   fence <transactional id>        a claim initialised a producer (every older one of the id is fenced)
 *   send <topic>:<key>,... ...      a transaction's sendBatch, by topic
 *   offsets <topic>[<p>]=<offset>   a transaction's sendOffsets
 *   commit | commit failed | abort  the transaction's end
 *   resolve <offset>                the batch's resolveOffset
 *   pause|resume <topic>[<p>]       the consumer's pause and resume
 *   seek <topic>[<p>]=<offset>      the consumer's seek
 *
 * The fake broker keeps what committed transactions wrote and the group's committed offsets, and
 * refuses the commit of a fenced producer, as Kafka does.
 */
import type {
  Admin,
  Consumer,
  ConsumerRunConfig,
  EachBatchPayload,
  Kafka,
  KafkaMessage,
  Message,
  Producer,
  ProducerConfig,
  RecordMetadata,
  Transaction,
} from 'kafkajs';
import { DecodeError } from '../../../runtime/errors.ts';
import { createLogger, type Logger } from '../../../runtime/log.ts';
import { StageMetrics } from '../../../runtime/metrics.ts';
import { StageRunner, type InputRecord, type OutputRecord, type StageDefinition } from '../../../runtime/processor.ts';
import type { AvroCodec } from '../../../runtime/codec.ts';
import { topicNames } from '../../../topics/catalog.ts';

export const topics = topicNames('unit');
/** The full names the tests read in the log. */
export const TASKS = topics.name('tasks');
export const OUTCOMES = topics.name('outcomes');
export const TASKS_DLQ = topics.dlq('tasks');
/** The fence line of partition `p` of the tasks topic (the claim's transactional id `<group>.<topic>.<p>`). */
export const fence = (p = 0) => `fence ${topics.group('unit')}.${TASKS}.${p}`;

/** A fake broker's state, empty or with committed offsets. */
export function fakeBroker(committed: Array<[string, bigint]> = []): FakeBroker {
  return { log: [], written: [], committed: new Map(committed), failCommits: 0 };
}

/** A record a committed transaction wrote. */
export type Written = { topic: string; key: string; value: unknown; headers: Record<string, string> };

export interface FakeBroker {
  log: string[];
  /** What committed transactions wrote, in commit order. */
  written: Written[];
  /** The group's committed offsets, by `topic[partition]`. */
  committed: Map<string, bigint>;
  /** The next `failCommits` commits fail (the broker refuses them), then commits succeed again. */
  failCommits: number;
  /** Refuses the `n`th commit (counting from 1, fenced producers' aside) when it answers true. */
  refuseCommit?: (n: number) => boolean;
}

/** The consumer kafkajs would give the runner: the test delivers batches through {@link deliver}. */
export class FakeConsumer {
  readonly events = { GROUP_JOIN: 'consumer.group_join', END_BATCH_PROCESS: 'consumer.end_batch_process', CRASH: 'consumer.crash' } as const;
  private readonly handlers = new Map<string, Array<(event: { payload: unknown }) => void>>();
  runConfig: ConsumerRunConfig | null = null;
  /** Throws from pause, seek and resume when set (kafkajs between a crash and its restart), logging `refused <call>`. */
  refuse: Error | null = null;
  /** Throws from connect when set (a rebuilt consumer that can't reach the group). */
  failConnect: Error | null = null;
  disconnected = false;

  constructor(private readonly log: string[]) {}

  async connect(): Promise<void> {
    if (this.failConnect) throw this.failConnect;
  }
  async subscribe(): Promise<void> {}
  async run(config: ConsumerRunConfig): Promise<void> {
    this.runConfig = config;
  }
  async disconnect(): Promise<void> {
    this.disconnected = true;
  }
  on(event: string, handler: (event: { payload: unknown }) => void): () => void {
    this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler]);
    return () => undefined;
  }
  emit(event: string, payload: unknown): void {
    for (const h of this.handlers.get(event) ?? []) h({ payload });
  }
  private refuseIfSet(call: string): void {
    if (!this.refuse) return;
    this.log.push(`refused ${call}`);
    throw this.refuse;
  }
  pause(tps: Array<{ topic: string; partitions: number[] }>): void {
    this.refuseIfSet('pause');
    for (const { topic, partitions } of tps) for (const p of partitions) this.log.push(`pause ${topic}[${p}]`);
  }
  resume(tps: Array<{ topic: string; partitions: number[] }>): void {
    this.refuseIfSet('resume');
    for (const { topic, partitions } of tps) for (const p of partitions) this.log.push(`resume ${topic}[${p}]`);
  }
  seek({ topic, partition, offset }: { topic: string; partition: number; offset: string }): void {
    this.refuseIfSet('seek');
    this.log.push(`seek ${topic}[${partition}]=${offset}`);
  }
}

/** A broker's worth of fakes: `kafka.consumer()` makes a new {@link FakeConsumer} each time (`consumers` has them all). */
export function fakeKafka(broker: FakeBroker = fakeBroker()) {
  const { log } = broker;
  const consumers: FakeConsumer[] = [];
  /** The latest epoch of each transactional id: a producer initialised before it is fenced. */
  const epochs = new Map<string, number>();
  let commits = 0;
  const producer = (config?: ProducerConfig): Producer => {
    const id = config?.transactionalId ?? '';
    let epoch: number | null = null;
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      transaction: async (): Promise<Transaction> => {
        if (epoch === null) {
          // kafkajs initialises the transactional id with the producer's first transaction.
          epoch = (epochs.get(id) ?? 0) + 1;
          epochs.set(id, epoch);
          log.push(`fence ${id}`);
          return { abort: async () => undefined } as unknown as Transaction;
        }
        const sent: Message[][] = [];
        const sentTopics: string[] = [];
        const offsets: Array<[string, bigint]> = [];
        return {
          sendBatch: async ({ topicMessages }: { topicMessages: Array<{ topic: string; messages: Message[] }> }): Promise<RecordMetadata[]> => {
            log.push(`send ${topicMessages.map((t) => `${t.topic}:${t.messages.map((m) => String(m.key)).join(',')}`).join(' ')}`);
            for (const t of topicMessages) {
              sentTopics.push(t.topic);
              sent.push(t.messages);
            }
            return topicMessages.map((t) => ({ topicName: t.topic, partition: 0, errorCode: 0 }));
          },
          sendOffsets: async ({ topics: tps }: { topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }> }) => {
            for (const { topic, partitions } of tps) {
              for (const { partition, offset } of partitions) {
                log.push(`offsets ${topic}[${partition}]=${offset}`);
                offsets.push([`${topic}[${partition}]`, BigInt(offset)]);
              }
            }
          },
          commit: async () => {
            if (epochs.get(id) !== epoch) {
              log.push('commit failed');
              throw new Error(`producer ${id} fenced`);
            }
            commits++;
            if (broker.failCommits > 0 || broker.refuseCommit?.(commits)) {
              if (broker.failCommits > 0) broker.failCommits--;
              log.push('commit failed');
              throw new Error('the broker refused the commit');
            }
            log.push('commit');
            sent.forEach((messages, i) => {
              for (const m of messages)
                broker.written.push({
                  topic: sentTopics[i]!,
                  key: String(m.key),
                  value: parsed(m.value),
                  headers: Object.fromEntries(Object.entries(m.headers ?? {}).map(([k, v]) => [k, String(v)])),
                });
            });
            for (const [tp, offset] of offsets) broker.committed.set(tp, offset);
          },
          abort: async () => void log.push('abort'),
        } as unknown as Transaction;
      },
    } as unknown as Producer;
  };
  const admin = (): Admin =>
    ({
      connect: async () => undefined,
      disconnect: async () => undefined,
      fetchOffsets: async ({ topics: names }: { topics: string[] }) =>
        names.map((topic) => ({
          topic,
          partitions: [...broker.committed]
            .filter(([tp]) => tp.startsWith(`${topic}[`))
            .map(([tp, offset]) => ({ partition: Number(/\[(\d+)\]$/.exec(tp)![1]), offset: offset.toString(), metadata: null })),
        })),
    }) as unknown as Admin;
  const kafka = {
    consumer: () => {
      const c = new FakeConsumer(log);
      consumers.push(c);
      return c as unknown as Consumer;
    },
    producer,
    admin,
  } as unknown as Kafka;
  return { kafka, broker, consumers, log };
}

/** A written value as the test reads it: JSON, else its text (a dead letter keeps the raw input). */
function parsed(value: Message['value']): unknown {
  if (value === null || value === undefined) return null;
  try {
    return JSON.parse(String(value)) as unknown;
  } catch {
    return String(value);
  }
}

/** Reads values as JSON (a value that is not JSON fails to decode); writes JSON. */
export const jsonCodec = {
  topics,
  decode: async (_id: string, value: Buffer | null) => {
    const text = value?.toString('utf8') ?? '';
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new DecodeError(`not JSON: ${text.slice(0, 20)}`);
    }
  },
  encode: async (_id: string, value: unknown) => Buffer.from(JSON.stringify(value)),
} as unknown as AvroCodec;

/** An input record at `offset` of run `key`; `value` is its raw value (default: a task of that run). */
export function record(offset: number, key: string, value?: string): KafkaMessage {
  return {
    offset: String(offset),
    key: Buffer.from(key),
    value: Buffer.from(value ?? JSON.stringify({ thought_id: key })),
    timestamp: String(1_700_000_000_000 + offset),
    headers: {},
    attributes: 0,
    size: 0,
  } as unknown as KafkaMessage;
}

/** A stage reading tasks and writing one outcome per task, whose `handle` the test may replace. */
export function stage(over: Partial<StageDefinition> = {}): StageDefinition {
  return {
    stage: 'unit',
    inputs: ['tasks'],
    outputs: ['outcomes'],
    concurrency: 4,
    maxRecordsPerTransaction: 2,
    maxInputBytes: 1024,
    handle: async (r: InputRecord): Promise<OutputRecord[]> => [{ topic: 'outcomes', key: r.key, value: { thought_id: r.key, from: r.offset }, span: 'unit' }],
    ...over,
  };
}

/** What the kafkajs payload's callbacks did, beside the log. */
export interface Delivery {
  heartbeats: number;
  /** Set to make isStale() answer true (a rebalance began) or isRunning() false. */
  stale: boolean;
  running: boolean;
  /** Called after each resolveOffset. */
  onResolve?(offset: string): void;
}

let instances = 0;

/**
 * A StageRunner of `def` on the fakes, started, with partitions `assigned` of the tasks topic (as
 * the group's join would give them). `deliver` hands it a batch as kafkajs's fetcher would.
 */
export async function startRunner(def: StageDefinition, options: { assigned?: number[]; broker?: FakeBroker; logger?: Logger } = {}) {
  const fakes = fakeKafka(options.broker);
  const logger = options.logger ?? createLogger({}, { level: 'error', write: () => undefined });
  const fatal: Error[] = [];
  const runner = new StageRunner(def, {
    kafka: fakes.kafka,
    codec: jsonCodec,
    logger,
    metrics: new StageMetrics(`unit-${++instances}`),
    sessionTimeoutMs: 10000,
    onFatal: (e) => void fatal.push(e),
  });
  await runner.start();
  const consumer = fakes.consumers[0]!;
  const join = (partitions: number[]) => consumer.emit(consumer.events.GROUP_JOIN, { memberAssignment: { [TASKS]: partitions } });
  join(options.assigned ?? [0]);
  /** Delivers `messages` of `partition` as one batch; `lastOffset` defaults to the last message's. */
  const deliver = (messages: KafkaMessage[], opts: { partition?: number; highWatermark?: number; lastOffset?: number; delivery?: Partial<Delivery> } = {}) => {
    const delivery: Delivery = { heartbeats: 0, stale: false, running: true, ...opts.delivery };
    const last = opts.lastOffset ?? Number(messages[messages.length - 1]?.offset ?? -1);
    const batch = {
      topic: TASKS,
      partition: opts.partition ?? 0,
      highWatermark: String(opts.highWatermark ?? last + 1),
      messages,
      lastOffset: () => String(last),
      isEmpty: () => messages.length === 0,
      firstOffset: () => messages[0]?.offset ?? null,
      offsetLag: () => '0',
      offsetLagLow: () => '0',
    };
    const payload = {
      batch,
      resolveOffset: (offset: string) => {
        fakes.log.push(`resolve ${offset}`);
        delivery.onResolve?.(offset);
      },
      heartbeat: async () => void delivery.heartbeats++,
      isRunning: () => delivery.running,
      isStale: () => delivery.stale,
      commitOffsetsIfNecessary: async () => undefined,
      uncommittedOffsets: () => ({ topics: [] }),
      pause: () => () => undefined,
    } as unknown as EachBatchPayload;
    return { done: consumer.runConfig!.eachBatch!(payload), delivery };
  };
  return { runner, ...fakes, consumer, join, deliver, fatal };
}

/** Resolves once `check` holds (polled), or fails after `timeoutMs`, showing `log` when given. */
export async function until(what: string, check: () => boolean, timeoutMs = 5000, log?: readonly string[]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${log ? `; the log:\n  ${log.join('\n  ')}` : ''}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A latch the test opens. */
export function latch(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Lets the promises the fakes resolved at once settle (they never wait on a timer). */
export const settle = () => new Promise((r) => setImmediate(r));

/**
 * `tao status`: one look at the loop's health, read from the cluster and the stage processes.
 *
 * - consumer lag per stage group and partition: the group's committed offset against the topic's
 *   high watermark (admin API);
 * - runs in flight: the latest snapshot of every run in Thought's compacted `thought.runs`;
 * - circuit breakers: each stage process's `/health` (the action process reports its breakers);
 * - dead letters: the records of every `.dlq` topic, by error code.
 */
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { errorMessage } from '../runtime/errors.ts';
import type { Logger } from '../runtime/log.ts';
import { DLQ_HEADERS } from '../runtime/processor.ts';
import type { RunSnapshot, RunStatus } from '../schemas/types.gen.ts';
import { DEAD_LETTERED, type TopicId } from '../topics/catalog.ts';
import { CompactedView, followFromBeginning, missingTopics } from '../runtime/follow.ts';

/** The topics each stage's consumer group reads (as declared in processors/<stage>/stage.ts). */
export const STAGE_INPUTS: Readonly<Record<'thought' | 'action' | 'observation', readonly TopicId[]>> = {
  thought: ['tasks', 'observationResults'],
  action: ['thoughtRequests'],
  observation: ['actionResults'],
};

/** Where `tao status` looks for stage processes' /health when TAO_STATUS_ENDPOINTS is unset. */
export const DEFAULT_STATUS_ENDPOINTS = ['http://127.0.0.1:9401', 'http://127.0.0.1:9402', 'http://127.0.0.1:9403'];

export interface LagRow {
  stage: string;
  group: string;
  topic: string;
  partition: number;
  /** The group's committed offset; null when it has committed none on this partition. */
  committed: string | null;
  /** The partition's high watermark. */
  end: string;
  /** end − committed (end − start of log when nothing is committed: the group reads from the beginning). */
  lag: number;
}

export interface GroupSummary {
  stage: string;
  group: string;
  /** Consumer group state as the coordinator reports it (Stable, Empty, PreparingRebalance, Dead, ...). */
  state: string;
  members: number;
  lag: number;
}

export interface EndpointReport {
  url: string;
  reachable: boolean;
  /** The stage the process runs, from its /health. */
  stage?: string;
  healthy?: boolean;
  /** Tool name → closed | half_open | open (the action process only). */
  breakers?: Record<string, string>;
  error?: string;
}

export interface DeadLetterSummary {
  topic: string;
  records: number;
  /** Error code (the `tao.error.code` header) → records. */
  byReason: Record<string, number>;
}

/** Everything `tao status` shows; `--json` prints it as is. */
export interface StatusReport {
  namespace: string;
  at: string;
  groups: GroupSummary[];
  lag: LagRow[];
  runs: { topic: string; running: number; awaitingInput: number; awaitingApproval: number; ended: number; readToEnd: boolean } | null;
  endpoints: EndpointReport[];
  deadLetters: DeadLetterSummary[];
  deadLettersReadToEnd: boolean;
  /** Catalog topics this namespace lacks (`tao topics apply` creates them); they are left out above. */
  missingTopics: string[];
}

export interface StatusDeps {
  kafka: Kafka;
  codec: AvroCodec;
  logger: Logger;
  /** Base URLs of stage processes' ops servers. */
  endpoints: readonly string[];
  /** How long to read thought.runs and the .dlq topics before reporting what was read so far. */
  readTimeoutMs: number;
  /** Per /health request. */
  httpTimeoutMs?: number;
}

/**
 * Collects a {@link StatusReport}. An unreachable endpoint is reported, not thrown; a broker that
 * can't be reached fails the call (the admin client's error).
 */
export async function collectStatus(deps: StatusDeps): Promise<StatusReport> {
  const { topics } = deps.codec;
  const wanted = [...new Set(Object.values(STAGE_INPUTS).flat())].map((id) => topics.name(id));
  const missing = await missingTopics(deps.kafka, [...wanted, topics.name('thoughtRuns'), ...DEAD_LETTERED.map((id) => topics.dlq(id))]);
  const has = (name: string) => !missing.includes(name);
  const [offsets, runs, deadLetters, endpoints] = await Promise.all([
    consumerLag(deps, has),
    has(topics.name('thoughtRuns')) ? runCounts(deps) : Promise.resolve(null),
    deadLetterCounts(deps, has),
    Promise.all(deps.endpoints.map((url) => probeEndpoint(url, deps.httpTimeoutMs ?? 5000))),
  ]);
  return {
    namespace: topics.namespace,
    at: new Date().toISOString(),
    ...offsets,
    runs,
    endpoints,
    deadLetters: deadLetters.rows,
    deadLettersReadToEnd: deadLetters.readToEnd,
    missingTopics: missing,
  };
}

async function consumerLag({ kafka, codec }: StatusDeps, has: (topic: string) => boolean): Promise<{ groups: GroupSummary[]; lag: LagRow[] }> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = new Map<string, Array<{ partition: number; high: string; low: string }>>();
    for (const id of new Set(Object.values(STAGE_INPUTS).flat())) {
      const name = codec.topics.name(id);
      if (has(name)) ends.set(name, await admin.fetchTopicOffsets(name));
    }
    const stages = Object.keys(STAGE_INPUTS) as Array<keyof typeof STAGE_INPUTS>;
    const described = await admin.describeGroups(stages.map((s) => codec.topics.group(s)));
    const groups: GroupSummary[] = [];
    const lag: LagRow[] = [];
    for (const stage of stages) {
      const group = codec.topics.group(stage);
      const topics = STAGE_INPUTS[stage].map((id) => codec.topics.name(id)).filter(has);
      const committed = topics.length ? await admin.fetchOffsets({ groupId: group, topics }) : [];
      let total = 0;
      for (const topic of topics) {
        const byPartition = new Map((committed.find((c) => c.topic === topic)?.partitions ?? []).map((p) => [p.partition, p.offset]));
        for (const { partition, high, low } of [...(ends.get(topic) ?? [])].sort((a, b) => a.partition - b.partition)) {
          const offset = byPartition.get(partition);
          const has = offset !== undefined && BigInt(offset) >= 0n;
          const behind = Number(BigInt(high) - (has ? BigInt(offset) : BigInt(low)));
          total += Math.max(0, behind);
          lag.push({ stage, group, topic, partition, committed: has ? offset : null, end: high, lag: Math.max(0, behind) });
        }
      }
      const info = described.groups.find((g) => g.groupId === group);
      groups.push({ stage, group, state: info?.state ?? 'Unknown', members: info?.members.length ?? 0, lag: total });
    }
    return { groups, lag };
  } finally {
    await admin.disconnect();
  }
}

async function runCounts({ kafka, codec, logger, readTimeoutMs }: StatusDeps): Promise<NonNullable<StatusReport['runs']>> {
  const view = await CompactedView.start<RunStatus>(kafka, codec, 'thoughtRuns', (v) => (v as RunSnapshot).status, logger);
  try {
    const readToEnd = await within(view.reachedEnd, readTimeoutMs);
    return {
      topic: codec.topics.name('thoughtRuns'),
      running: view.count((s) => s === 'running'),
      awaitingInput: view.count((s) => s === 'awaiting_input'),
      awaitingApproval: view.count((s) => s === 'awaiting_approval'),
      ended: view.count((s) => s === 'ended'),
      readToEnd,
    };
  } finally {
    await view.stop();
  }
}

async function deadLetterCounts(
  { kafka, codec, readTimeoutMs }: StatusDeps,
  has: (topic: string) => boolean,
): Promise<{ rows: DeadLetterSummary[]; readToEnd: boolean }> {
  const names = DEAD_LETTERED.map((id) => codec.topics.dlq(id)).filter(has);
  const rows = new Map<string, DeadLetterSummary>(names.map((name) => [name, { topic: name, records: 0, byReason: {} }]));
  if (rows.size === 0) return { rows: [], readToEnd: true };
  const follower = await followFromBeginning(kafka, [...rows.keys()], {
    groupPrefix: codec.topics.group('status'),
    onMessage: (topic, _, message) => {
      const row = rows.get(topic)!;
      const reason = message.headers?.[DLQ_HEADERS.errorCode]?.toString() ?? 'unknown';
      row.records++;
      row.byReason[reason] = (row.byReason[reason] ?? 0) + 1;
    },
  });
  try {
    const readToEnd = await within(follower.reachedEnd, readTimeoutMs);
    return { rows: [...rows.values()], readToEnd };
  } finally {
    await follower.stop();
  }
}

/**
 * A stage busy with a burst of work can miss one /health deadline; a second try tells a slow
 * process from a gone one. A refused connection is final at once.
 */
export async function probeEndpoint(url: string, timeoutMs: number): Promise<EndpointReport> {
  const first = await probe(url, timeoutMs);
  const { timedOut, ...report } = first.timedOut ? await probe(url, timeoutMs) : first;
  return report;
}

async function probe(url: string, timeoutMs: number): Promise<EndpointReport & { timedOut?: boolean }> {
  const base = url.replace(/\/+$/, '');
  try {
    const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json()) as { stage?: unknown; ok?: unknown; breakers?: unknown };
    return {
      url: base,
      reachable: true,
      ...(typeof body.stage === 'string' ? { stage: body.stage } : {}),
      healthy: res.ok && body.ok === true,
      ...(body.breakers && typeof body.breakers === 'object' ? { breakers: body.breakers as Record<string, string> } : {}),
    };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    const timedOut = (err as { name?: string }).name === 'TimeoutError';
    return { url: base, reachable: false, error: cause ? `${errorMessage(err)} (${cause})` : errorMessage(err), ...(timedOut ? { timedOut } : {}) };
  }
}

/** True if `promise` settles in time; false (and keeps what was read so far) on timeout. */
async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The report as text for a terminal: one table per concern, a line per row. */
export function renderStatus(report: StatusReport): string {
  const out: string[] = [];
  out.push(`tao status: namespace ${report.namespace ? `"${report.namespace}"` : '(none)'} at ${report.at}`);
  if (report.missingTopics.length) out.push(`MISSING TOPICS (left out below; \`tao topics apply\` creates them): ${report.missingTopics.join(', ')}`);
  out.push('', 'CONSUMER LAG (committed offset vs. high watermark)');
  out.push(
    table([
      ['GROUP', 'STATE', 'MEMBERS', 'TOPIC', 'PARTITION', 'COMMITTED', 'END', 'LAG'],
      ...report.lag.map((r) => {
        const g = report.groups.find((x) => x.group === r.group);
        return [r.group, g?.state ?? '', String(g?.members ?? 0), r.topic, String(r.partition), r.committed ?? '-', r.end, String(r.lag)];
      }),
    ]),
  );
  out.push(`  total lag: ${report.groups.map((g) => `${g.stage} ${g.lag}`).join(', ')}`);
  const runs = report.runs;
  if (runs) {
    out.push('', `RUNS (${runs.topic}${runs.readToEnd ? '' : ', NOT read to the end: counts are partial'})`);
    out.push(`  in flight ${runs.running}   awaiting input ${runs.awaitingInput}   awaiting approval ${runs.awaitingApproval}   ended ${runs.ended}`);
  } else out.push('', 'RUNS: no thought.runs topic');
  out.push('', 'CIRCUIT BREAKERS (from each process /health)');
  for (const e of report.endpoints) {
    if (!e.reachable) out.push(`  ${e.url}  unreachable: ${e.error}`);
    else {
      const breakers = Object.entries(e.breakers ?? {});
      const shown =
        e.breakers === undefined
          ? 'no breakers reported'
          : breakers.length
            ? breakers.map(([tool, state]) => `${tool} ${state}`).join(', ')
            : 'no breakers yet (no tool with a breaker called)';
      out.push(`  ${e.url}  ${e.stage ?? '?'}${e.healthy ? '' : ' (NOT healthy)'}: ${shown}`);
    }
  }
  out.push('', `DEAD LETTERS${report.deadLettersReadToEnd ? '' : ' (NOT read to the end: counts are partial)'}`);
  out.push(
    table([
      ['TOPIC', 'RECORDS', 'BY ERROR CODE'],
      ...report.deadLetters.map((d) => [
        d.topic,
        String(d.records),
        Object.entries(d.byReason)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
      ]),
    ]),
  );
  return out.join('\n');
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => `  ${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}`.trimEnd()).join('\n');
}

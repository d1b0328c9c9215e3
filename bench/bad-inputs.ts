/**
 * The bad-input corpus run: sends every kind of bad input of bench/lib/bad-input-kinds.ts (HTTP
 * ingress, webhooks, every consumed topic) at a running loop (the three stages, the ingress and the
 * demo tool server as processes), then checks that
 * - every input is accounted for: a 4xx (or an explicit duplicate / ignored answer), a dead letter
 *   with its reason, a refusal by the broker, or an outcome of the run it started, as its kind says;
 * - no process crashed: every stage and the ingress still run and answer /health with 200;
 * - no partition stalled: a good record written after the bad ones on the same partition of each
 *   topic is processed through to an outcome.
 *
 *   node --import tsx bench/bad-inputs.ts [--out bad-inputs.json] [--at REV]
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import kafkajs, { type ConfigResourceTypes as ConfigResourceTypesT } from 'kafkajs';
import { DLQ_HEADERS } from '../runtime/processor.ts';
import type { Outcome } from '../schemas/types.gen.ts';
import { DEAD_LETTERED, TOPICS, type TopicId } from '../topics/catalog.ts';
import { commitTree, removeTrees } from './lib/ab.ts';
import { commandOptions } from './lib/command-line.ts';
import { corpus, sentinel, type BadInputKind, type Expect, type Sent } from './lib/bad-input-kinds.ts';
import { Fleet, REPO_ROOT, freshNamespace, getJson, progress, quietOwnLogs, startToolServerProcess, type BenchNamespace } from './lib/harness.ts';
import { followLog, type RawRecord } from './lib/load.ts';
import { deleteNamespace, startStages } from './lib/phases.ts';
import { table } from './lib/stats.ts';
import { createProducer } from '../runtime/kafka.ts';

/** What happened to one kind. */
export interface KindResult {
  id: string;
  surface: string;
  description: string;
  expected: string;
  observed: string;
  accounted: boolean;
  /** The defect this kind once found, when it found one (a failure is a regression of its fix). */
  knownIssue: string | null;
}

/** The corpus report. */
export interface BadInputReport {
  namespace: string;
  kinds: KindResult[];
  accounted: number;
  /** Round 1: most kinds; round 2: those that took a stage down before their fix (sent last so a regression cannot hide the rest). */
  rounds: Array<{
    round: number;
    kinds: number;
    accounted: number;
    /** Per topic and partition that received bad records: was the good record after them processed? */
    stalls: Array<{ topic: string; partition: number; sentinel: string; processed: boolean }>;
    /** Processes that exited so far. */
    crashes: Array<{ name: string; code: number | string }>;
    /** Processes whose /health was not 200 at the end of the round. */
    unhealthy: string[];
  }>;
  /** Dead letters that belong to no kind (none expected). */
  unattributedDeadLetters: number;
  durationSeconds: number;
}

// kafkajs is CommonJS: its enums are on the default export under ESM.
const { ConfigResourceTypes } = kafkajs as unknown as { ConfigResourceTypes: typeof ConfigResourceTypesT };

const SECRETS = { github: `gh-${randomUUID()}`, jira: `jira-${randomUUID()}` };
/** Topic limit set on the namespace's tasks and thought.requests topics, as an operator might, so the stages' own size limits can be reached. */
const RAISED_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** The log as the checks see it. */
interface Observed {
  outcomes: Map<string, Outcome>;
  deadLetters: RawRecord[];
  tasksByKey: Map<string, number>;
}

async function observe(ns: BenchNamespace, records: RawRecord[], decoded: Map<RawRecord, Outcome | null>): Promise<Observed> {
  const outcomes = new Map<string, Outcome>();
  const tasksByKey = new Map<string, number>();
  const deadLetters: RawRecord[] = [];
  for (const r of records) {
    if (r.topic === ns.codec.topics.name('outcomes')) {
      if (!decoded.has(r)) decoded.set(r, await ns.codec.decode<Outcome>('outcomes', r.value).catch(() => null));
      const o = decoded.get(r);
      if (o) outcomes.set(r.key, o);
    } else if (r.topic === ns.codec.topics.name('tasks')) tasksByKey.set(r.key, (tasksByKey.get(r.key) ?? 0) + 1);
    else if (r.topic.endsWith('.dlq')) deadLetters.push(r);
  }
  return { outcomes, deadLetters, tasksByKey };
}

function describe(e: Expect): string {
  if ('http' in e) return `HTTP ${e.http.join('|')}`;
  if ('accepted' in e) return `202, then outcome ${e.accepted.join('|')}`;
  if ('duplicate' in e) return '200 duplicate, nothing written again';
  if ('ignored' in e) return '202 ignored, nothing written';
  if ('deadLetter' in e) return `dead letter ${e.deadLetter.join('|')}`;
  if ('laterDeadLetter' in e) return `dead letter ${e.laterDeadLetter.codes.join('|')} on ${TOPICS[e.laterDeadLetter.topic].name}.dlq`;
  if ('outcome' in e) return `outcome ${e.outcome.join('|')}${e.reasons ? ` (${e.reasons.join('|')})` : ''}`;
  return `refused by the broker (${e.refused})`;
}

/** What the log and the answers say happened to one sent input, and whether that is what its kind expects. */
function account(ns: BenchNamespace, kind: BadInputKind, sent: Sent, o: Observed): { observed: string; accounted: boolean } {
  const e = kind.expect;
  const outcomeOf = (key: string) => o.outcomes.get(key);
  const fmtOutcome = (x: Outcome | undefined) => (x ? `outcome ${x.status} (${x.reason_code})` : 'no outcome yet');
  if (sent.via === 'refused') return { observed: `refused by the broker (${sent.error})`, accounted: 'refused' in e && e.refused === sent.error };
  if (sent.via === 'http') {
    const error = typeof sent.body?.error === 'string' ? ` ${sent.body.error}` : '';
    const answer = `HTTP ${sent.status}${error}`;
    if ('http' in e) return { observed: answer, accounted: e.http.includes(sent.status) };
    if ('ignored' in e) return { observed: `${answer}${sent.body?.ignored ? ' ignored' : ''}`, accounted: sent.status === 202 && sent.body?.ignored === true };
    const thoughtId = typeof sent.body?.thought_id === 'string' ? sent.body.thought_id : null;
    if ('duplicate' in e) {
      const firstId = sent.extra?.body?.thought_id;
      const written = thoughtId ? (o.tasksByKey.get(thoughtId) ?? 0) : 0;
      return {
        observed: `first HTTP ${sent.extra?.status}, replay ${answer}${sent.body?.duplicate ? ' duplicate' : ''}; ${written} task record(s)`,
        accounted: sent.status === 200 && sent.body?.duplicate === true && thoughtId === firstId && written === 1,
      };
    }
    if ('accepted' in e) {
      const out = thoughtId ? outcomeOf(thoughtId) : undefined;
      return { observed: `${answer}; ${fmtOutcome(out)}`, accounted: sent.status === 202 && out !== undefined && e.accepted.includes(out.status) };
    }
    return { observed: answer, accounted: false };
  }
  const own = o.deadLetters.filter(
    (d) =>
      d.headers[DLQ_HEADERS.sourceTopic] === sent.topic &&
      d.headers[DLQ_HEADERS.sourcePartition] === String(sent.partition) &&
      d.headers[DLQ_HEADERS.sourceOffset] === sent.offset,
  );
  const later = o.deadLetters.filter((d) => d.key === sent.key && !own.includes(d));
  const out = outcomeOf(sent.key);
  const parts = [
    ...own.map((d) => `dead letter ${d.headers[DLQ_HEADERS.errorCode]}`),
    ...later.map((d) => `later dead letter ${d.headers[DLQ_HEADERS.errorCode]} on ${d.topic.slice(ns.namespace.length + 1)}`),
    ...(out ? [fmtOutcome(out)] : []),
  ];
  const observed = parts.length ? parts.join('; ') : 'nothing yet';
  if ('deadLetter' in e) return { observed, accounted: own.some((d) => e.deadLetter.includes(d.headers[DLQ_HEADERS.errorCode] ?? '')) };
  if ('laterDeadLetter' in e)
    return {
      observed,
      accounted: later.some(
        (d) => d.topic === ns.codec.topics.dlq(e.laterDeadLetter.topic) && e.laterDeadLetter.codes.includes(d.headers[DLQ_HEADERS.errorCode] ?? ''),
      ),
    };
  if ('outcome' in e)
    return { observed, accounted: out !== undefined && e.outcome.includes(out.status) && (!e.reasons || e.reasons.includes(out.reason_code)) };
  return { observed, accounted: false };
}

/**
 * Runs the corpus against a fresh loop on the broker named by `env`. `bin` runs the stages and the
 * ingress from another tree (a commit's, bench/lib/ab.ts).
 */
export async function runBadInputs(
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; log?: (line: string) => void; bin?: string } = {},
): Promise<BadInputReport> {
  const started = Date.now();
  const log = options.log ?? ((line: string) => progress(started, line));
  const env = options.env ?? process.env;
  const fleet = new Fleet();
  const tools = await startToolServerProcess(fleet, env);
  const ns = await freshNamespace('corpus', env, {
    TAO_DEMO_TOOL_ORIGIN: tools.url,
    TAO_WEBHOOK_SECRET_GITHUB: SECRETS.github,
    TAO_WEBHOOK_SECRET_JIRA: SECRETS.jira,
  });
  const topics = ns.codec.topics;
  let follower: Awaited<ReturnType<typeof followLog>> | null = null;
  try {
    const admin = ns.kafka.admin();
    await admin.connect();
    try {
      // AlterConfigs replaces a topic's whole config: the catalog's settings go along.
      await admin.alterConfigs({
        validateOnly: false,
        resources: (['tasks', 'thoughtRequests'] as const).map((id) => ({
          type: ConfigResourceTypes.TOPIC,
          name: topics.name(id),
          configEntries: [
            { name: 'max.message.bytes', value: String(RAISED_MAX_MESSAGE_BYTES) },
            { name: 'retention.ms', value: String(TOPICS[id].retentionMs) },
            { name: 'cleanup.policy', value: TOPICS[id].cleanupPolicy },
          ],
        })),
      });
    } finally {
      await admin.disconnect();
    }
    log(`corpus: starting the stages and the ingress in ${ns.namespace}`);
    await startStages(fleet, ns.env, 1, options.bin);
    let ingressUrl = '';
    await fleet.start({
      name: 'ingress',
      args: [options.bin ?? `${REPO_ROOT}bin/tao.js`, 'run', 'ingress'],
      env: { ...ns.env, TAO_INGRESS_PORT: '0' },
      ready: (line) => {
        if (!line.includes('"msg":"ingress listening"')) return null;
        ingressUrl = (JSON.parse(line) as { url: string }).url;
        return 0;
      },
    });
    follower = await followLog(ns.kafka, [topics.name('tasks'), topics.name('outcomes'), ...DEAD_LETTERED.map((id) => topics.dlq(id))]);
    const producer = createProducer(ns.kafka);
    await producer.connect();
    const ctx = { ns, ingressUrl, secrets: SECRETS, tag: randomUUID().slice(0, 8), producer };
    const kinds = corpus();
    const sent = new Map<BadInputKind, Sent>();
    const sentinels: Array<{ topic: TopicId; partition: number; key: string; round: number }> = [];
    const decoded = new Map<RawRecord, Outcome | null>();
    const check = async () => {
      const o = await observe(ns, follower!.records, decoded);
      return { o, results: kinds.filter((k) => sent.has(k)).map((k) => ({ kind: k, ...account(ns, k, sent.get(k)!, o) })) };
    };
    const rounds: BadInputReport['rounds'] = [];
    try {
      // Round 2 holds the kinds that used to take a stage down: a regression there cannot hide round 1's results.
      for (const [round, batch] of [
        [1, kinds.filter((k) => !k.last)],
        [2, kinds.filter((k) => k.last)],
      ] as const) {
        if (batch.length === 0) continue;
        log(`corpus: round ${round}: sending ${batch.length} kinds of bad input`);
        for (const kind of batch) {
          try {
            sent.set(kind, await kind.send(ctx));
          } catch (err) {
            sent.set(kind, { via: 'refused', error: `driver error: ${(err as Error).message}` });
          }
        }
        const used = new Map<TopicId, Set<number>>();
        for (const k of batch)
          if (k.surface !== 'ingress' && k.surface !== 'webhook') (used.get(k.surface) ?? used.set(k.surface, new Set()).get(k.surface)!).add(k.partition ?? 0);
        for (const [topic, partitions] of used) {
          for (const p of partitions) sentinels.push({ topic, partition: p, key: (await sentinel(ctx, topic as 'tasks', p)).key, round });
        }
        log(`corpus: round ${round}: waiting until every input is accounted for`);
        const mine = (r: { kind: BadInputKind }) => batch.includes(r.kind);
        // Round 2's kinds either resolve at once (fixed) or never (the stage is down): no need to wait long.
        const deadline = Date.now() + (round === 1 ? (options.timeoutMs ?? 90000) : 20000);
        for (;;) {
          const state = await check();
          const done =
            state.results.filter(mine).every((r) => r.accounted || r.kind.knownIssue) &&
            sentinels.filter((x) => x.round === round).every((x) => state.o.outcomes.get(x.key)?.status === 'completed');
          if (done || Date.now() > deadline) break;
          await new Promise((r) => setTimeout(r, 500));
        }
        // A late dead letter for an input already accounted for shows up in the unattributed count.
        await new Promise((r) => setTimeout(r, 1500));
        const state = await check();
        const health = await Promise.all(
          fleet
            .alive()
            .filter((i) => i.opsPort > 0)
            .map(async (i) => ({ i, h: await getJson<{ lastError?: string }>(i.opsPort, '/health') })),
        );
        const ingressHealth = await fetch(`${ingressUrl}/health`).then(
          (r) => r.status,
          () => 0,
        );
        rounds.push({
          round,
          kinds: batch.length,
          accounted: state.results.filter(mine).filter((r) => r.accounted).length,
          stalls: sentinels
            .filter((x) => x.round === round)
            .map((x) => ({
              topic: topics.name(x.topic),
              partition: x.partition,
              sentinel: x.key,
              processed: state.o.outcomes.get(x.key)?.status === 'completed',
            })),
          crashes: fleet.unexpectedExits.map((e) => ({ name: e.name, code: e.code })),
          unhealthy: [
            ...health.filter(({ h }) => h?.status !== 200).map(({ i, h }) => `${i.name}#${i.id}${h?.body.lastError ? ` (${h.body.lastError})` : ''}`),
            ...(ingressHealth === 200 ? [] : ['ingress']),
          ],
        });
      }
    } finally {
      await producer.disconnect();
    }
    const state = await check();
    const attributed = new Set<RawRecord>();
    for (const kind of kinds) {
      const s = sent.get(kind);
      if (s?.via !== 'record') continue;
      for (const d of state.o.deadLetters)
        if (
          d.key === s.key ||
          (d.headers[DLQ_HEADERS.sourceTopic] === s.topic &&
            d.headers[DLQ_HEADERS.sourceOffset] === s.offset &&
            d.headers[DLQ_HEADERS.sourcePartition] === String(s.partition))
        )
          attributed.add(d);
    }
    return {
      namespace: ns.namespace,
      kinds: state.results.map((r) => ({
        id: r.kind.id,
        surface: r.kind.surface,
        description: r.kind.description,
        expected: describe(r.kind.expect),
        observed: r.observed,
        accounted: r.accounted,
        knownIssue: r.kind.knownIssue ?? null,
      })),
      accounted: state.results.filter((r) => r.accounted).length,
      rounds,
      unattributedDeadLetters: state.o.deadLetters.filter((d) => !attributed.has(d)).length,
      durationSeconds: (Date.now() - started) / 1000,
    };
  } finally {
    await follower?.stop();
    await fleet.stop();
    await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns.namespace}.`));
  }
}

/** The report as text. */
export function renderBadInputs(r: BadInputReport): string {
  return [
    table(
      ['kind', 'expected', 'observed', 'ok'],
      r.kinds.map((k) => [k.id, k.expected, k.observed, k.accounted ? 'yes' : k.knownIssue ? `NO (regression of ${k.knownIssue})` : 'NO']),
    ),
    '',
    ...r.rounds.map(
      (x) =>
        `round ${x.round}: ${x.accounted}/${x.kinds} kinds accounted for; partitions stalled: ${
          x.stalls
            .filter((s) => !s.processed)
            .map((s) => `${s.topic}[${s.partition}]`)
            .join(', ') || 'none'
        } (of ${x.stalls.length} checked); crashed: ${x.crashes.map((c) => `${c.name} (${c.code})`).join(', ') || 'none'}; unhealthy: ${x.unhealthy.join(', ') || 'none'}`,
    ),
    `${r.accounted}/${r.kinds.length} kinds accounted for in all; unattributed dead letters: ${r.unattributedDeadLetters}; ${r.durationSeconds.toFixed(0)} s`,
  ].join('\n');
}

/** True when every kind was accounted for and no round left a stall, a crash or an unhealthy process. */
export function corpusPassed(r: BadInputReport): boolean {
  return (
    r.kinds.every((k) => k.accounted) &&
    r.rounds.every((x) => x.stalls.every((s) => s.processed) && x.crashes.length === 0 && x.unhealthy.length === 0) &&
    r.unattributedDeadLetters === 0
  );
}

const USAGE = `usage: node --import tsx bench/bad-inputs.ts [options]
  (every kind of bad input of bench/lib/bad-input-kinds.ts at a running loop, on KAFKA_BROKERS /
  SCHEMA_REGISTRY_URL: each accounted for, no process crashed, no partition stalled)

  --out FILE               also write the JSON report
  --at REV                 run the code of commit REV (HEAD~1, a sha, a tag) instead of the checkout
  -h, --help               this text`;

async function main(): Promise<void> {
  const values = commandOptions('bad-inputs', USAGE, { out: { type: 'string' }, at: { type: 'string' } });
  quietOwnLogs();
  const tree = values.at ? await commitTree(values.at) : null;
  let report: BadInputReport;
  try {
    report = await runBadInputs({ bin: tree?.bin });
  } finally {
    removeTrees();
  }
  if (tree) console.log(`code under test: ${tree.code}`);
  console.log(renderBadInputs(report));
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = corpusPassed(report) ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    () => process.exit(process.exitCode ?? 0),
    (err: Error) => {
      console.error(`bad-inputs: ${err.stack ?? err.message}`);
      process.exit(1);
    },
  );
}

/**
 * A regression set through the real loop on the real broker, in a namespace of its own: the demo
 * tool server, Thought (react), Action, Observation and the HTTP ingress as separate processes,
 * with the model at `baseUrl`. Each ticket is posted to the ingress (at most `concurrency` runs at
 * once), its outcome waited for on the committed log (read_committed), and every run read back
 * from the log and scored ({@link scoreRun}). The processes are stopped and the namespace's topics
 * and consumer groups deleted at the end, on a failure, and on Ctrl-C ({@link stopOnSignals}).
 */
import { loadavg } from 'node:os';
import { Fleet, stageSpec, startIngressProcess, startToolServerProcess } from './fleet.ts';
import { decodeLoopRecords, deleteNamespace, followLog, freshNamespace, loopTopicNames } from './namespace.ts';
import { responseEnums } from './regression-calls.ts';
import { scoreRun, type RegressionTicket } from './regression-set.ts';
import { readRun, type Scored } from './runs.ts';

/** What a set is run with. */
export interface SetOptions {
  /** The deployment's environment (the broker, the registry, the model's keys). */
  env: NodeJS.ProcessEnv;
  /** The release's variables (`releaseEnv(folder)`), laid over it: its parts and its run settings. */
  release: Readonly<Record<string, string>>;
  tickets: readonly RegressionTicket[];
  /** An OpenAI-compatible endpoint (with its /v1) and the model to ask (a release's own TAO_LLM_MODEL wins: the model is part of a release). */
  baseUrl: string;
  model: string;
  /** Runs at once (default 2). */
  concurrency?: number;
  /** How long to wait for one run's outcome (default 20 min). */
  runTimeoutMs?: number;
  /** The namespace's prefix, e.g. `eval-`. */
  prefix?: string;
  /** A progress line (stderr). */
  say(line: string): void;
}

/** A set's runs, scored, and how it was run. */
export interface SetResult {
  namespace: string;
  /** The model the runs asked. */
  model: string;
  scored: Scored[];
  started: string;
  wallMs: number;
  load: number[];
}

const cleanups = new Set<() => Promise<void>>();
let signalled: NodeJS.Signals | null = null;

/**
 * On SIGINT or SIGTERM: stops every set still running (its processes, its namespace's topics and
 * groups), then `also`, then exits 130. Call once per command.
 */
export function stopOnSignals(say: (line: string) => void, also: () => Promise<void> = async () => {}): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      signalled = signal;
      say(`${signal}: stopping the stages and deleting the namespace`);
      void Promise.allSettled([...cleanups].map((c) => c()))
        .then(also)
        .finally(() => process.exit(130));
    });
}

/** The signal that stopped the sets, if one did (a set then fails on its stopped processes). */
export function stoppedBy(): NodeJS.Signals | null {
  return signalled;
}

/** Runs `tickets` through the loop in a fresh namespace and scores each run. */
export async function runSet(options: SetOptions): Promise<SetResult> {
  const { tickets, say } = options;
  const concurrency = options.concurrency ?? 2;
  const runTimeoutMs = options.runTimeoutMs ?? 1_200_000;
  const load = loadavg();
  const t0 = Date.now();
  const started = new Date(t0).toISOString();
  const fleet = new Fleet();
  const model = options.release.TAO_LLM_MODEL ?? options.model;
  const ns = await freshNamespace(options.prefix ?? 'eval-', options.env, {
    // The react loop (a model takes the turns) with constrained answers, unless the release says otherwise.
    TAO_PLANNER: 'react',
    TAO_LLM_TOOL_CALLS: options.env.TAO_LLM_TOOL_CALLS ?? 'json_schema',
    ...options.release,
    TAO_LLM_BASE_URL: options.baseUrl,
    TAO_LLM_MODEL: model,
    // A 1.5B model on 2 shared cores: a turn takes 10-40 s, longer while another run's turn holds a slot.
    TAO_LLM_TIMEOUT_MS: options.env.TAO_LLM_TIMEOUT_MS ?? '240000',
    TAO_LOG_LEVEL: 'info',
  });
  say(`namespace ${ns.namespace}; model ${model} at ${options.baseUrl}; ${tickets.length} tickets, ${concurrency} at once`);
  // One clean-up, however many ask for it (the end of the set, a failure, a signal): each waits for it to finish.
  let cleaning: Promise<void> | null = null;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      await fleet.stop();
      await deleteNamespace(ns.kafka, (name) => name.startsWith(`${ns.namespace}.`));
    })());
  cleanups.add(cleanUp);
  const scored: Scored[] = [];
  try {
    const tools = await startToolServerProcess(fleet, ns.env);
    const env = { ...ns.env, TAO_DEMO_TOOL_ORIGIN: tools.url };
    for (const stage of ['thought', 'action', 'observation']) await fleet.start(stageSpec(stage, env));
    const ingress = await startIngressProcess(fleet, env);
    say(`stages, tool server and ingress up; ingress ${ingress.url}`);
    const log = await followLog(
      ns.kafka,
      loopTopicNames(ns, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']),
      `${ns.namespace}.eval-follow`,
    );
    try {
      const outcomesTopic = ns.codec.topics.name('outcomes');
      const ended = (id: string) => log.records.some((r) => r.topic === outcomesTopic && r.key === id);
      const runIds = new Map<string, string>();
      const batch = `${t0}`;
      let next = 0;
      let done = 0;
      const worker = async () => {
        for (let i = next++; i < tickets.length; i = next++) {
          const ticket = tickets[i]!;
          const res = await fetch(`${ingress.url}/v1/tasks`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ text: ticket.text, source: 'eval', external_id: `${ticket.id}-${batch}` }),
          });
          if (res.status !== 202) throw new Error(`ingress answered ${res.status} to ${ticket.id}: ${await res.text()}`);
          const { thought_id } = (await res.json()) as { thought_id: string };
          runIds.set(ticket.id, thought_id);
          const w0 = Date.now();
          const ok = await log.waitFor(() => ended(thought_id), runTimeoutMs);
          done++;
          say(`${done}/${tickets.length} ${ticket.id}: ${ok ? 'ended' : 'NO OUTCOME'} after ${((Date.now() - w0) / 1000).toFixed(0)} s`);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      // The follower reads the topics' partitions in parallel: an outcome read does not mean its run's last
      // verdicts are read yet. Each run's waves are, once it holds as many verdict records as the outcome has waves.
      const waves = new Map<string, number>();
      for (const r of await decodeLoopRecords(
        ns,
        log.records.filter((x) => x.topic === outcomesTopic),
      ))
        waves.set(r.key, (r.decoded as { iterations?: number } | null)?.iterations ?? 0);
      const verdictsTopic = ns.codec.topics.name('observationResults');
      const read = await log.waitFor((rs) => [...waves].every(([key, n]) => rs.filter((x) => x.topic === verdictsTopic && x.key === key).length >= n), 60000);
      if (!read) say("some runs' verdicts were not read back within 60 s: their scores may miss tool results");
      const records = await decodeLoopRecords(ns, log.records);
      const enums = responseEnums(env);
      for (const ticket of tickets) {
        const run = readRun(runIds.get(ticket.id) ?? '', ticket, records);
        const score = run
          ? scoreRun(ticket, run, enums)
          : { verdict: 'unsolved' as const, missingFacts: [], missingTools: [], unsupported: [], why: 'no outcome within the wait' };
        scored.push({ ticket, run, score });
      }
    } finally {
      await log.stop();
    }
  } finally {
    await cleanUp();
    cleanups.delete(cleanUp);
  }
  return { namespace: ns.namespace, model, scored, started, wallMs: Date.now() - t0, load };
}

/**
 * `npm run chaos`: 1,000 runs under load while a random stage instance is SIGKILLed every few
 * seconds (and replaced), with one broker restart halfway, then the fault-mix run; prints what was
 * lost, duplicated, completed and recovered, and writes the JSON report to `--out`. The runs refund
 * their order (a call with side effects; a quarter of the refunds answered after the time-out on
 * every attempt, so Thought retries them), and the refunds the tool server applied are counted by
 * `Idempotency-Key`: none may be applied twice.
 *
 *   node --import tsx bench/chaos.ts [--out chaos.json] [--runs 1000] [--kills 24] [--kill-every-ms 4000]
 *       [--instances 2] [--seed N] [--fault-mix-runs 300] [--no-fault-mix] [--keep-infra]
 *       [--stage-log FILE]   append every stage's log lines (tagged by instance) to FILE
 *       [--shared]   use the broker at KAFKA_BROKERS instead of a private one (no broker restart)
 *       [--rollouts]   also move the release pointer (tao rollout start|promote|rollback) through three
 *                    releases around the kills, and check every run kept one whole, pointed-at manifest
 *       [--fault-mix-only]   only the fault-mix run
 *       [--brokers 3 [--leader-kills 5] [--outage 60]]   a private 3-broker cluster: instead of the
 *                    broker restart, SIGKILL the busiest leader 5 times (each restarted), a rolling
 *                    restart of every broker, and with --outage S every broker down for S seconds
 *
 * By default everything runs on a private broker and registry under /tmp/tao-chaos (ports 29092,
 * 29093, 28081), started here and stopped at the end, so the broker restart disturbs nobody else.
 * With --brokers 3 the cluster lives under /tmp/tao-chaos-cluster (brokers 29192/29194/29196,
 * controllers 29193/29195/29197, registry 29181). The Kafka jars and registry binary are linked
 * from this checkout's .infra/ when present.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as infra from '../infra/local.ts';
import { KAFKA_VERSION, REGISTRY_VERSION, type InfraOptions } from '../infra/local.ts';
import type { ClusterControl } from './lib/chaos-cluster.ts';
import { runChaos, randomSeed, type ChaosReport } from './lib/chaos-run.ts';
import { runFaultMix, type FaultMixReport } from './lib/fault-mix-run.ts';
import { Fleet, REPO_ROOT, progress, quietOwnLogs, startToolServerProcess } from './lib/harness.ts';
import { commandOptions, integerOption, usageError } from './lib/command-line.ts';
import { fmt, table } from './lib/stats.ts';
import { setting } from '../runtime/config.ts';

/** The private chaos infrastructure: its own broker and registry, safe to restart. */
export const CHAOS_INFRA: Pick<InfraOptions, 'dir' | 'kafkaPort' | 'controllerPort' | 'registryPort' | 'brokers'> = {
  dir: '/tmp/tao-chaos',
  kafkaPort: 29092,
  controllerPort: 29093,
  registryPort: 28081,
  brokers: 1,
};
/** The private chaos cluster of `--brokers 3`. */
export const CHAOS_CLUSTER_INFRA: Pick<InfraOptions, 'dir' | 'kafkaPort' | 'controllerPort' | 'registryPort' | 'brokers'> = {
  dir: '/tmp/tao-chaos-cluster',
  kafkaPort: 29192,
  controllerPort: 29193,
  registryPort: 29181,
  brokers: 3,
};

/**
 * Starts a private broker (or cluster) and registry in `infra.dir` (default {@link CHAOS_INFRA}),
 * linking the jars and the registry binary from this checkout's .infra/ so nothing is downloaded
 * or built again, and returns their addresses.
 */
export async function chaosInfraUp(
  log: (line: string) => void,
  options: Partial<InfraOptions> = CHAOS_INFRA,
): Promise<{ brokers: string; registryUrl: string }> {
  const dir = options.dir ?? CHAOS_INFRA.dir;
  const main = join(REPO_ROOT, '.infra');
  mkdirSync(join(dir, 'bin'), { recursive: true });
  const links: Array<[string, string]> = [
    [join(main, `kafka-${KAFKA_VERSION}`), join(dir, `kafka-${KAFKA_VERSION}`)],
    [join(main, 'bin', `schema-registry-${REGISTRY_VERSION}`), join(dir, 'bin', `schema-registry-${REGISTRY_VERSION}`)],
  ];
  for (const [from, to] of links) if (existsSync(from) && !existsSync(to)) symlinkSync(from, to);
  return infra.up({ env: process.env, ...options, log });
}

/** {@link ClusterControl} of a local cluster started through infra/local.ts. */
export function localClusterControl(options: Partial<InfraOptions>, log: (line: string) => void): ClusterControl {
  return {
    nodes: options.brokers ?? 1,
    stop: (node, signal) => infra.stopKafka({ env: process.env, ...options, log }, { signal, node }),
    start: async (node) => void (await infra.startKafka({ env: process.env, ...options, log }, { node })),
  };
}

/** Everything `npm run chaos` reports. */
export interface ChaosCommandReport {
  startedAt: string;
  broker: string;
  /** Null with --fault-mix-only. */
  chaos: ChaosReport | null;
  faultMix: FaultMixReport | null;
}

/** The reports as text. */
export function renderChaos(r: ChaosCommandReport): string {
  const lines: string[] = [];
  const c = r.chaos;
  if (c)
    lines.push(
      `chaos ${r.startedAt} on ${r.broker}: ${c.submitted} runs, ${c.kills.length} SIGKILLs (${c.options.instances} instance(s) per stage), broker restart: ${c.brokerRestart ? `yes, down ${fmt(c.brokerRestart.downMs)} ms` : 'no'}, broker faults: ${c.brokerFaults ? c.brokerFaults.recoveries.length : 'none'}, ${fmt(c.durationSeconds)} s`,
      '',
      table(
        ['figure', 'value'],
        [
          ['runs submitted', c.submitted],
          ['runs with a committed outcome', c.outcomes],
          [
            'lost runs (no outcome)',
            c.lostRuns.length
              ? `${c.lostRuns.length}: last committed at ${Object.entries(c.lostAt)
                  .map(([at, e]) => `${at} ${e.runs} (partitions ${e.partitions.join(',')})`)
                  .join('; ')}`
              : 0,
          ],
          ['duplicated steps (read_committed scan)', c.duplicatedSteps.length],
          [
            'side effects applied twice (refunds counted at the tool server by Idempotency-Key)',
            `${c.sideEffects.appliedTwice.length} (${c.sideEffects.applied} refunds applied for ${c.sideEffects.runsWithEffect} runs; ${c.sideEffects.retriedByThought} refund calls answered too late and retried by Thought)`,
          ],
          ['task records re-sent by the submitter (ignored by Thought)', c.duplicatedTasks],
          ['dead letters', Object.values(c.deadLetters).reduce((a, b) => a + b, 0)],
          ['task completion rate', `${fmt(100 * c.rates.completionRate)}% (${c.rates.completed}/${c.rates.ended})`],
          ['self-recovery rate', `${fmt(100 * c.rates.selfRecoveryRate)}% (${c.rates.recovered}/${c.rates.hitFailure} runs that met a failure)`],
          ['unexpected process exits', c.unexpectedExits.length],
          ['instances replaced for failing /health (liveness probe)', c.unhealthyReplaced.length],
          ['batches a new partition owner skipped (already committed) / records', `${c.handovers.skippedBatches} / ${c.handovers.skippedRecords}`],
          ['transactions failed and retried (e.g. an old owner fenced)', c.handovers.failedTransactions],
          ['run latency P50 / P99 ms', `${fmt(c.runMs.p50)} / ${fmt(c.runMs.p99)}`],
        ],
      ),
      '',
      table(
        ['after a kill', 'P50 ms', 'P95 ms', 'max ms'],
        [
          ['killed group lag back to its pre-kill level', c.killRecovery.lagRecoveryMs.p50, c.killRecovery.lagRecoveryMs.p95, c.killRecovery.lagRecoveryMs.max],
          ['longest pause between outcomes', c.killRecovery.outcomePauseMs.p50, c.killRecovery.outcomePauseMs.p95, c.killRecovery.outcomePauseMs.max],
          ['replacement process ready', c.killRecovery.replacementReadyMs.p50, c.killRecovery.replacementReadyMs.p95, c.killRecovery.replacementReadyMs.max],
        ],
      ),
    );
  const ro = c?.rollouts;
  if (ro)
    lines.push(
      '',
      `rollouts: ${ro.moves.total} pointer moves (${Object.entries(ro.moves.byKind)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')}; ${ro.moves.failed} failed), ${ro.killsDuringMoves.total} kills within 2 s of a move (${Object.entries(ro.killsDuringMoves.byStage)
        .map(([s, n]) => `${s} ${n}`)
        .join(', ')}); ${ro.checkedRuns} runs checked, ${ro.violations.length} off their manifest`,
      table(
        ['release', 'manifest', 'runs'],
        ro.manifests.map((m) => [m.name, m.digest.slice(0, 12), m.runs]),
      ),
      ...ro.violations.slice(0, 20).map((v) => `  ${v}`),
    );
  if (c?.unhealthyReplaced.length)
    lines.push(
      '',
      table(
        ['replaced', 'at s', 'unhealthy for s', 'why'],
        c.unhealthyReplaced.map((u) => [u.name, u.atS, u.unhealthyForS, u.why.slice(0, 140)]),
      ),
    );
  if (c?.brokerRestart)
    lines.push(
      '',
      `broker restart at ${fmt(c.brokerRestart.atS)} s: down ${fmt(c.brokerRestart.downMs)} ms; every group's lag back to its earlier level after ${fmt(c.brokerRestart.lagRecoveryMs ?? Number.NaN)} ms; longest pause between outcomes ${fmt(c.brokerRestart.outcomePauseMs ?? Number.NaN)} ms`,
    );
  if (c?.brokerFaults) {
    const ms = (x: number | null) => (x === null ? Number.NaN : x);
    lines.push(
      '',
      table(
        ['broker fault', 'node', 'at s', 'down ms', 'every ISR full ms', 'first commit ms', 'its partitions committing ms', 'first outcome after up ms'],
        c.brokerFaults.recoveries.map((f) => [
          f.kind,
          f.node ?? 'all',
          f.atS,
          f.downMs,
          ms(f.inSyncMs),
          ms(f.firstCommitMs),
          ms(f.ledPartitionsCommitMs),
          ms(f.firstOutcomeAfterUpMs),
        ]),
      ),
    );
    const o = c.brokerFaults.outage;
    if (o)
      lines.push(
        '',
        `whole-cluster outage: ${o.runsInFlightAtStart} runs in flight when every broker stopped; ingress answers while down: ${JSON.stringify(o.answersWhileDown)}; first task accepted ${o.firstAcceptedMs === null ? 'never' : `${fmt(o.firstAcceptedMs)} ms`} after the stop`,
      );
  }
  if (c)
    lines.push(
      '',
      table(
        ['kill', 'stage', 'at s', 'lag recovery ms', 'outcome pause ms', 'replacement ready ms'],
        c.kills.map((k) => [k.n, k.stage, k.atS, k.lagRecoveryMs ?? Number.NaN, k.outcomePauseMs ?? Number.NaN, k.replacementReadyMs ?? Number.NaN]),
      ),
    );
  const f = r.faultMix;
  if (f) {
    lines.push(
      '',
      `fault mix: ${f.runs} runs; tool calls ${f.toolCalls.primary} to the faulty server, ${f.toolCalls.replica} to the fallback replica; ${fmt(f.durationSeconds)} s`,
    );
    lines.push(
      table(
        ['fault', 'share of calls', 'applied'],
        f.faults.map((x) => [x.mode, `${fmt(100 * x.shareOfCalls)}%`, x.applied]),
      ),
    );
    lines.push(
      table(
        ['figure', 'value'],
        [
          ['task completion rate', `${fmt(100 * f.rates.completionRate)}% (${f.rates.completed}/${f.rates.ended})`],
          ['self-recovery rate', `${fmt(100 * f.rates.selfRecoveryRate)}% (${f.rates.recovered}/${f.rates.hitFailure} runs that met a failure)`],
          ['outcomes by status', JSON.stringify(f.rates.byStatus)],
          ['outcomes by reason', JSON.stringify(f.rates.byReason)],
          ['step results / retried / served by fallback', `${f.steps.results} / ${f.steps.retried} / ${f.steps.servedByFallback}`],
          ['invalid verdicts by error type', JSON.stringify(f.steps.invalidVerdicts)],
          ['duplicated steps', f.duplicatedSteps],
          ['run latency P50 / P99 ms', `${fmt(f.runMs.p50)} / ${fmt(f.runMs.p99)}`],
        ],
      ),
    );
  }
  return lines.join('\n');
}

const USAGE = `usage: npm run chaos -- [options]
  (1,000 runs while stage instances are SIGKILLed and the broker restarts, each refunding its order
  with a quarter of the refunds answered late, counted at the tool server by key; then the fault-mix run;
  on a private broker and registry under /tmp/tao-chaos unless --shared; docs/BENCHMARKS.md)

  --out FILE               also write the JSON report
  --stage-log FILE         append every stage's log lines (tagged by instance) to FILE
  --runs N                 runs under the kills (1000)
  --kills N                SIGKILLs of a random stage instance, each replaced (24), one every
  --kill-every-ms N        N ms (4000)
  --instances N            instances of each stage (2)
  --seed N                 the kills' random seed (random; printed, to repeat a run)
  --fault-mix-runs N       runs of the fault-mix run (300), or --no-fault-mix, or
  --fault-mix-only         only the fault-mix run
  --keep-infra             leave the private broker and registry running
  --shared                 use KAFKA_BROKERS / SCHEMA_REGISTRY_URL instead (no broker restart)
  --rollouts               also move the release pointer through three releases around the kills
                           (a move right before each kill, one between) and check every run's manifest
  --brokers 3              a private 3-broker cluster (/tmp/tao-chaos-cluster): instead of the broker
                           restart, SIGKILL the busiest leader --leader-kills times (5), a rolling
                           restart of every broker, and with
  --outage S               every broker down for S seconds
  -h, --help               this text`;

async function main(): Promise<void> {
  const values = commandOptions('chaos', USAGE, {
    out: { type: 'string' },
    runs: { type: 'string', default: '1000' },
    kills: { type: 'string', default: '24' },
    'kill-every-ms': { type: 'string', default: '4000' },
    instances: { type: 'string', default: '2' },
    seed: { type: 'string' },
    'fault-mix-runs': { type: 'string', default: '300' },
    'no-fault-mix': { type: 'boolean', default: false },
    'keep-infra': { type: 'boolean', default: false },
    shared: { type: 'boolean', default: false },
    'fault-mix-only': { type: 'boolean', default: false },
    brokers: { type: 'string', default: '1' },
    'leader-kills': { type: 'string', default: '5' },
    outage: { type: 'string' },
    'stage-log': { type: 'string' },
    rollouts: { type: 'boolean', default: false },
  });
  const bad = (message: string) => usageError('chaos', USAGE, message);
  const brokers = Number(values.brokers);
  if (![1, 3].includes(brokers)) bad(`--brokers must be 1 or 3, got ${values.brokers}`);
  if (brokers === 3 && values.shared) bad('--brokers 3 starts its own cluster; it does not go with --shared');
  const outageS = values.outage === undefined ? null : Number(values.outage);
  if (outageS !== null && (brokers !== 3 || !(outageS > 0))) bad(`--outage needs --brokers 3 and a positive number of seconds, got ${values.outage}`);
  const count = (name: string, min: number) => integerOption('chaos', USAGE, values, name, min);
  const counts = {
    runs: count('runs', 1),
    kills: count('kills', 0),
    killEveryMs: count('kill-every-ms', 1),
    instances: count('instances', 1),
    faultMixRuns: count('fault-mix-runs', 1),
    leaderKills: count('leader-kills', 0),
  };
  const seedValue = values.seed === undefined ? null : Number(values.seed);
  if (seedValue !== null && !Number.isInteger(seedValue)) bad(`--seed must be an integer, got "${values.seed}"`);
  const infraOptions = brokers === 3 ? CHAOS_CLUSTER_INFRA : CHAOS_INFRA;
  quietOwnLogs();
  const started = Date.now();
  const log = (line: string) => progress(started, line);
  let env: NodeJS.ProcessEnv = process.env;
  const ownInfra = !values.shared;
  if (ownInfra) {
    log(`starting the private chaos ${brokers === 3 ? '3-broker cluster' : 'broker'} and registry in ${infraOptions.dir}`);
    const endpoints = await chaosInfraUp(log, infraOptions);
    env = { ...process.env, KAFKA_BROKERS: endpoints.brokers, SCHEMA_REGISTRY_URL: endpoints.registryUrl };
  }
  const fleet = new Fleet();
  try {
    const tools = await startToolServerProcess(fleet, env);
    const seed = seedValue ?? randomSeed();
    log(`chaos seed ${seed}`);
    const chaos = values['fault-mix-only']
      ? null
      : await runChaos({
          runs: counts.runs,
          kills: counts.kills,
          killEveryMs: counts.killEveryMs,
          instances: counts.instances,
          toolServerErrorRate: 0.05,
          brokerRestart:
            ownInfra && brokers === 1
              ? {
                  stop: () => infra.stopKafka({ env: process.env, ...CHAOS_INFRA, log }),
                  start: async () => void (await infra.startKafka({ env: process.env, ...CHAOS_INFRA, log })),
                }
              : null,
          brokerFaults:
            brokers === 3
              ? {
                  plan: {
                    leaderKills: counts.leaderKills,
                    downMs: 3000,
                    rollingRestart: true,
                    outageMs: outageS === null ? null : outageS * 1000,
                    settleMs: 5000,
                    startAfterMs: 8000,
                  },
                  cluster: localClusterControl(infraOptions, log),
                }
              : null,
          // The broker faults take ~3 min (plus the outage): the runs are spread over them.
          ...(brokers === 3 ? { submitMs: 180000 + (outageS ?? 0) * 1000 } : {}),
          env,
          tools,
          drainTimeoutMs: 240000,
          seed,
          rollouts: values.rollouts,
          ...(values['stage-log'] ? { stageLog: values['stage-log'] } : {}),
        });
    let faultMix: FaultMixReport | null = null;
    if (!values['no-fault-mix']) {
      const replica = await startToolServerProcess(fleet, env, 'replica');
      faultMix = await runFaultMix({
        runs: counts.faultMixRuns,
        concurrency: 32,
        env,
        primary: tools,
        replica,
        catalogDir: join(CHAOS_INFRA.dir, `fault-mix-catalog-${process.pid}`),
        timeoutMs: 300000,
      });
    }
    const report: ChaosCommandReport = { startedAt: new Date(started).toISOString(), broker: setting(env, 'KAFKA_BROKERS').join(','), chaos, faultMix };
    console.log(renderChaos(report));
    if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
    const answeredWhileDown = Object.entries(chaos?.brokerFaults?.outage?.answersWhileDown ?? {});
    const ok =
      chaos === null ||
      (chaos.lostRuns.length === 0 &&
        chaos.duplicatedSteps.length === 0 &&
        chaos.sideEffects.appliedTwice.length === 0 &&
        (chaos.rollouts?.violations.length ?? 0) === 0 &&
        answeredWhileDown.every(([status]) => status === '503'));
    if (!ok) process.exitCode = 1;
  } finally {
    await fleet.stop();
    if (ownInfra && !values['keep-infra']) await infra.down({ env: process.env, ...infraOptions, log });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    () => process.exit(process.exitCode ?? 0),
    (err: Error) => {
      console.error(`chaos: ${err.stack ?? err.message}`);
      process.exit(1);
    },
  );
}

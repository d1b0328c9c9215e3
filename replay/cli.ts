/**
 * `tao replay` and `tao dlq`: argument parsing, wiring to the cluster from the environment, and
 * printing. The work is in the modules next to this one, which tests call directly.
 *
 *   tao replay <thought_id> [--format terminal|json|html] [--out file] [--from ISO] [--to ISO]
 *              [--verify] [--fork <wave|step> [--set STEP.field=value ...] [--flow id@version]]
 *   tao dlq list [--topic <topic>] [--reason <code>] [--format terminal|json]
 *   tao dlq show <dlq topic> <partition> <offset> [--format terminal|json]
 *   tao dlq redrive <dlq topic> (--reason <code> | --key <thought_id> | --offsets p:o,... | --all) [--format terminal|json]
 *
 * Exit codes: 0 done (verify: no drift); 1 verify found drift, the run is not in the log, or the
 * request can't be carried out (the reason on stderr); 2 bad arguments.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { thoughtConfig } from '../processors/wiring/index.ts';
import { DEFAULT_FLOWS_DIR, loadFlows } from '../processors/thought/planners/flows.ts';
import { AvroCodec } from '../runtime/codec.ts';
import { loadRuntimeConfig, setting } from '../runtime/config.ts';
import { TaoError } from '../runtime/errors.ts';
import { createKafka, withProducer } from '../runtime/kafka.ts';
import { createLogger } from '../runtime/log.ts';
import { createContractAjv } from '../tools/catalog.ts';
import { listDeadLetters, redriveDeadLetters, showDeadLetter } from './dlq.ts';
import { planFork, writeFork } from './fork.ts';
import { readRunLog, type RunLogDeps } from './log.ts';
import { renderDlqList, renderDlqShow, renderRedrive, renderVerify } from './render-reports.ts';
import { renderHtml } from './render-html.ts';
import { renderTerminal } from './render-terminal.ts';
import { buildTimeline } from './build-timeline.ts';
import { verifyRun } from './verify.ts';
import { DLQ_USAGE, REPLAY_USAGE } from './usage.ts';

export { DLQ_USAGE, REPLAY_USAGE } from './usage.ts';
import { recordedManifest, verifyConfigsForRelease } from './run-release.ts';
import { verifyConfigsForRun } from './verify-config.ts';
import { releaseEnv } from '../runtime/release/folder.ts';

/** Where a command reads its configuration and writes its output (the process's by default; tests pass their own). */
export interface CliIo {
  env?: NodeJS.ProcessEnv;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
}

/**
 * `tao replay`: prints a run's timeline, or verifies it against today's code, or forks it.
 * Reads KAFKA_*, SCHEMA_REGISTRY_*, TAO_NAMESPACE (and, for --verify and --fork, the stages'
 * TAO_* settings) from the environment. Progress goes to stderr, the result to stdout or --out.
 * @returns the exit code (see the module comment).
 */
export async function replayCommand(argv: string[], io: CliIo = {}): Promise<number> {
  const { env, out, err } = streams(io);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        format: { type: 'string', default: 'terminal' },
        out: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        verify: { type: 'boolean', default: false },
        release: { type: 'string' },
        fork: { type: 'string' },
        set: { type: 'string', multiple: true, default: [] },
        flow: { type: 'string' },
        'timeout-s': { type: 'string', default: '60' },
      },
    });
  } catch (e) {
    return usage(err, (e as Error).message, REPLAY_USAGE);
  }
  const { values, positionals } = parsed;
  const [thoughtId, ...extra] = positionals;
  if (!thoughtId || extra.length) return usage(err, 'replay needs exactly one thought_id', REPLAY_USAGE);
  const format = values.format;
  if (format !== 'terminal' && format !== 'json' && format !== 'html')
    return usage(err, `--format must be terminal, json or html, got "${format}"`, REPLAY_USAGE);
  if (values.verify && values.fork !== undefined) return usage(err, '--verify and --fork are separate commands', REPLAY_USAGE);
  if (values.release !== undefined && !values.verify) return usage(err, '--release goes with --verify', REPLAY_USAGE);
  if (values.fork === undefined && (values.set.length || values.flow)) return usage(err, '--set and --flow go with --fork', REPLAY_USAGE);
  if ((values.verify || values.fork !== undefined) && format === 'html') return usage(err, '--verify and --fork print terminal or json', REPLAY_USAGE);
  const fromMs = values.from === undefined ? null : Date.parse(values.from);
  const toMs = values.to === undefined ? null : Date.parse(values.to);
  if (Number.isNaN(fromMs) || Number.isNaN(toMs)) return usage(err, '--from and --to take ISO times, e.g. 2026-01-31T12:00:00Z', REPLAY_USAGE);
  const timeoutS = Number(values['timeout-s']);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) return usage(err, '--timeout-s must be a positive number', REPLAY_USAGE);

  return handled(err, async () => {
    const deps = connect(env, err, timeoutS);
    const log = await readRunLog(deps, thoughtId, { fromMs, toMs });
    if (log.records.length === 0 && log.deadLetters.length === 0) {
      err(
        `tao replay: no record of run ${thoughtId} in ${log.namespace ? `namespace ${log.namespace}` : 'the default namespace'}${fromMs !== null || toMs !== null ? ' within the time bounds' : ''}\n`,
      );
      return 1;
    }
    if (values.verify) {
      // Under another release (a folder): its variables over the shell's, as `tao eval --from-log` builds a candidate.
      const configs = values.release !== undefined ? await underRelease(log, env, values.release) : await verifyConfigsForRelease(log, env, deps);
      const report = await verifyRun(log, configs);
      emit(out, values.out, format === 'json' ? JSON.stringify(report, null, 2) + '\n' : renderVerify(report));
      return report.drift ? 1 : 0;
    }
    if (values.fork !== undefined) {
      const flows = values.flow ? loadFlows(setting(env, 'TAO_FLOWS_DIR') ?? DEFAULT_FLOWS_DIR, createContractAjv()) : undefined;
      const fork = planFork(log, { point: values.fork, overrides: values.set, flow: values.flow ?? null }, { thought: await thoughtConfig(env), flows });
      await deps.codec.register(['thoughtRequests']);
      await withProducer(deps.kafka, (producer) => writeFork(producer, deps.codec, fork));
      err(
        `tao replay: forked ${fork.parent} at ${fork.point} (wave ${fork.iteration}: ${fork.request.steps.map((s) => s.step_id).join(', ')}) as ${fork.thought_id}\n`,
      );
      emit(
        out,
        values.out,
        format === 'json'
          ? JSON.stringify(
              {
                thought_id: fork.thought_id,
                forked_from: fork.parent,
                fork_point: fork.point,
                iteration: fork.iteration,
                task_id: fork.task_id,
                kept: fork.kept,
                steps: fork.request.steps,
              },
              null,
              2,
            ) + '\n'
          : `${fork.thought_id}\n`,
      );
      return 0;
    }
    const timeline = buildTimeline(log);
    emit(out, values.out, format === 'json' ? JSON.stringify(timeline, null, 2) + '\n' : format === 'html' ? renderHtml(timeline) : renderTerminal(timeline));
    if (values.out) err(`tao replay: wrote ${values.out}\n`);
    return 0;
  });
}

/**
 * `tao dlq list|show|redrive`: dead letters by topic and reason, one dead letter in full, and the
 * exactly-once re-drive of selected ones to their source topic.
 * @returns the exit code (see the module comment).
 */
export async function dlqCommand(argv: string[], io: CliIo = {}): Promise<number> {
  const { env, out, err } = streams(io);
  const [sub, ...rest] = argv;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        topic: { type: 'string' },
        reason: { type: 'string' },
        key: { type: 'string' },
        offsets: { type: 'string' },
        all: { type: 'boolean', default: false },
        format: { type: 'string', default: 'terminal' },
        'timeout-s': { type: 'string', default: '60' },
      },
    });
  } catch (e) {
    return usage(err, (e as Error).message, DLQ_USAGE);
  }
  const { values, positionals } = parsed;
  const json = values.format === 'json';
  if (values.format !== 'terminal' && !json) return usage(err, `--format must be terminal or json, got "${values.format}"`, DLQ_USAGE);
  const timeoutS = Number(values['timeout-s']);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) return usage(err, '--timeout-s must be a positive number', DLQ_USAGE);
  const print = (value: unknown, text: string) => out(json ? JSON.stringify(value, null, 2) + '\n' : text);

  switch (sub) {
    case 'list':
      if (positionals.length) return usage(err, `dlq list takes no positional arguments (got ${positionals.join(' ')})`, DLQ_USAGE);
      return handled(err, async () => {
        const listing = await listDeadLetters(connect(env, err, timeoutS, 'dlq'), { topic: values.topic ?? null, reason: values.reason ?? null });
        print(listing, renderDlqList(listing));
        return 0;
      });
    case 'show': {
      const [topic, partition, offset] = positionals;
      if (!topic || !partition || !offset || positionals.length !== 3 || !/^\d+$/.test(partition) || !/^\d+$/.test(offset))
        return usage(err, 'dlq show needs <dlq topic> <partition> <offset>', DLQ_USAGE);
      return handled(err, async () => {
        const entry = await showDeadLetter(connect(env, err, timeoutS, 'dlq'), topic, Number(partition), offset);
        print(entry, renderDlqShow(entry));
        return 0;
      });
    }
    case 'redrive': {
      const [topic] = positionals;
      if (!topic || positionals.length !== 1) return usage(err, 'dlq redrive needs one <dlq topic>', DLQ_USAGE);
      let offsets: Array<{ partition: number; offset: string }> | null = null;
      if (values.offsets !== undefined) {
        const items = values.offsets
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        if (!items.length || items.some((s) => !/^\d+:\d+$/.test(s)))
          return usage(err, `--offsets takes partition:offset pairs, e.g. 0:12,2:7 (got "${values.offsets}")`, DLQ_USAGE);
        offsets = items.map((s) => ({ partition: Number(s.split(':')[0]), offset: s.split(':')[1]! }));
      }
      if (!values.all && !values.reason && !values.key && !offsets)
        return usage(err, 'dlq redrive needs a selection: --reason, --key, --offsets, or --all', DLQ_USAGE);
      return handled(err, async () => {
        const report = await redriveDeadLetters(connect(env, err, timeoutS, 'dlq'), topic, { reason: values.reason ?? null, key: values.key ?? null, offsets });
        print(report, renderRedrive(report));
        return report.missing.length ? 1 : 0;
      });
    }
    default:
      return usage(err, `unknown dlq command "${sub ?? ''}"`, DLQ_USAGE);
  }
}

function streams(io: CliIo): { env: NodeJS.ProcessEnv; out: (text: string) => void; err: (text: string) => void } {
  return {
    env: io.env ?? process.env,
    out: io.stdout ?? ((text) => process.stdout.write(text)),
    err: io.stderr ?? ((text) => process.stderr.write(text)),
  };
}

function connect(env: NodeJS.ProcessEnv, err: (text: string) => void, timeoutS: number, command = 'replay'): RunLogDeps {
  const config = loadRuntimeConfig(env);
  const logger = createLogger({ command }, { level: 'error', write: (line) => err(line + '\n') });
  return {
    kafka: createKafka(config, 'tao-replay', logger),
    codec: AvroCodec.create(config),
    progress: (line) => err(`tao ${command}: ${line}\n`),
    timeoutMs: timeoutS * 1000,
  };
}

function emit(out: (text: string) => void, file: string | undefined, text: string): void {
  if (file) writeFileSync(file, text);
  else out(text);
}

/** Runs a command; a request that can't be carried out (bad input, config) is reported on stderr with exit 1, anything else propagates. */
async function handled(err: (text: string) => void, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof TaoError && !e.retriable && (e.code === 'CONTRACT_VIOLATION' || e.code === 'CONFIG_INVALID')) {
      err(`tao: ${e.message} [${e.code}]\n`);
      return 1;
    }
    throw e;
  }
}

function usage(err: (text: string) => void, problem: string, text: string): number {
  err(`${problem}\n${text}\n`);
  return 2;
}

/** The configurations to verify `log` with under release `folder` (`--verify --release`); the run keeps its recorded manifest digest, so only what the release changes differs. */
async function underRelease(log: Parameters<typeof recordedManifest>[0], env: NodeJS.ProcessEnv, folder: string) {
  const configs = await verifyConfigsForRun(log, { ...env, ...releaseEnv(folder) });
  const digest = recordedManifest(log);
  if (digest) configs.thought.manifest = digest;
  return { ...configs, notes: [...(configs.notes ?? []), `re-decided under the release folder ${folder}, not the run's own manifest`] };
}

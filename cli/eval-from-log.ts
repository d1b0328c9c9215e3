/**
 * `tao eval --from-log`: argument parsing, the candidate and the cluster from the environment, and
 * printing. The work is in replay/from-log/ (tests call it directly or through {@link main}).
 *
 * Exit codes: 0 no run diverged; 1 a run diverged (a CI gate), or the evaluation can't be carried out
 * (the reason on stderr); 2 bad arguments.
 */
import { parseArgs } from 'node:util';
import { AvroCodec } from '../runtime/codec.ts';
import { loadRuntimeConfig } from '../runtime/config.ts';
import { TaoError } from '../runtime/errors.ts';
import { createKafka } from '../runtime/kafka.ts';
import { createLogger } from '../runtime/log.ts';
import { OUTCOME_STATUS_SYMBOLS } from '../schemas/types.gen.ts';
import { EVAL_FROM_LOG_USAGE } from '../replay/usage.ts';

export { EVAL_FROM_LOG_USAGE } from '../replay/usage.ts';

/** Where the command reads its configuration and writes its output (the process's by default; tests pass their own). */
export interface EvalIo {
  env?: NodeJS.ProcessEnv;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
}

const list = (values: string[]) =>
  values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);

/**
 * `tao eval --from-log ...`. argv: the arguments after `eval`, with or without `--from-log` (the
 * `tao eval` command decides it is this one).
 * @returns the exit code (see the module comment).
 */
export async function main(argv: string[], io: EvalIo = {}): Promise<number> {
  const env = io.env ?? process.env;
  const out = io.stdout ?? ((text: string) => void process.stdout.write(text));
  const err = io.stderr ?? ((text: string) => void process.stderr.write(text));
  const usage = (problem: string) => (err(`${problem}\n${EVAL_FROM_LOG_USAGE}\n`), 2);
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        'from-log': { type: 'boolean', default: false },
        release: { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        skill: { type: 'string', multiple: true, default: [] },
        status: { type: 'string', multiple: true, default: [] },
        limit: { type: 'string' },
        'live-reads': { type: 'boolean', default: false },
        'base-url': { type: 'string' },
        model: { type: 'string' },
        json: { type: 'boolean', default: false },
        'timeout-s': { type: 'string', default: '60' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (e) {
    return usage((e as Error).message);
  }
  if (values.help) {
    out(`${EVAL_FROM_LOG_USAGE}\n`);
    return 0;
  }
  const sinceMs = values.since === undefined ? null : Date.parse(values.since);
  const untilMs = values.until === undefined ? null : Date.parse(values.until);
  if (Number.isNaN(sinceMs) || Number.isNaN(untilMs)) return usage('--since and --until take ISO times, e.g. 2026-01-31T12:00:00Z');
  if (sinceMs !== null && untilMs !== null && untilMs < sinceMs) return usage('--until is before --since');
  if (values.limit !== undefined && !/^[1-9]\d*$/.test(values.limit)) return usage(`--limit takes a positive whole number, got "${values.limit}"`);
  const timeoutS = Number(values['timeout-s']);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) return usage('--timeout-s must be a positive number');
  const statuses = list(values.status);
  const unknown = statuses.filter((s) => !(OUTCOME_STATUS_SYMBOLS as readonly string[]).includes(s));
  if (unknown.length) return usage(`--status takes ${OUTCOME_STATUS_SYMBOLS.join(', ')}; got ${unknown.join(', ')}`);

  try {
    const [{ candidateFrom }, { evaluateFromLog, renderFromLog }] = await Promise.all([
      import('../replay/from-log/candidate-config.ts'),
      import('../replay/from-log/evaluate.ts'),
    ]);
    const candidate = candidateFrom({ release: values.release, baseUrl: values['base-url'], model: values.model }, env);
    const config = loadRuntimeConfig(env);
    const logger = createLogger({ command: 'eval' }, { level: 'error', write: (line) => err(line + '\n') });
    const report = await evaluateFromLog(
      {
        kafka: createKafka(config, 'tao-eval', logger),
        codec: AvroCodec.create(config),
        progress: (line) => err(`tao eval: ${line}\n`),
        timeoutMs: timeoutS * 1000,
      },
      {
        window: { sinceMs, untilMs, skills: list(values.skill), statuses, limit: values.limit === undefined ? null : Number(values.limit) },
        candidate,
        liveReads: values['live-reads'],
      },
    );
    out(values.json ? JSON.stringify(report, null, 2) + '\n' : renderFromLog(report));
    return report.totals.diverged > 0 ? 1 : 0;
  } catch (e) {
    if (e instanceof TaoError && !e.retriable && (e.code === 'CONFIG_INVALID' || e.code === 'CONTRACT_VIOLATION')) {
      err(`tao: ${e.message} [${e.code}]\n`);
      return 1;
    }
    throw e;
  }
}

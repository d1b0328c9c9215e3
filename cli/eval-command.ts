/**
 * `tao eval`: a candidate release against a regression set, through the real stages on the real
 * broker in a namespace of its own (eval/run-set.ts), with a baseline side by side when given; a CI
 * gate (eval/compare.ts). docs/RELEASES.md, "Evaluating a change: tao eval".
 */
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { commandFlags, usageError } from '../runtime/command-flags.ts';
import { TaoError } from '../runtime/errors.ts';
import { releaseEnv } from '../runtime/release/folder.ts';

export const EVAL_USAGE = `usage: tao eval --release <folder> [--baseline <folder>] [--set <file>] [--only id,id] [--min-solved 0.85]
                [--base-url URL --model NAME] [--concurrency N] [--run-timeout-s 1200] [--json] [--out FILE]
  Runs a regression set through the real stages (the demo tool server, Thought with a model taking the
  turns, Action, Observation, the ingress, each its own process) on the broker KAFKA_BROKERS and
  SCHEMA_REGISTRY_URL name, in a namespace of its own whose topics and consumer groups are deleted
  afterwards (on a failure and on Ctrl-C too): the live topics are never touched. Each run is read
  back from the log and scored: solved (completed with every expected fact and a verified result of
  each tool it needs, or not completed as expected), wrong (an unsupported fact, or completed when it
  must not), unsolved (the rest). Reports per ticket and in total: solved, wrong and unsupported facts,
  escalations, turns, tokens, cost (with TAO_LLM_PRICES), wall time.
  --release FOLDER   the candidate: a release folder (skills/, catalog/, flows/, flows/routes.json,
                     observation-rules.json, settings.json; a part it lacks is the deployment's)
  --baseline FOLDER  the release to compare with (run first, in a namespace of its own): both side by side
  --set FILE         the regression set (default eval/regression-tickets.json: 45 tickets, English and Chinese)
  --only IDS         ticket ids of the set, comma-separated (default: every ticket)
  --min-solved X     the solved share (0 to 1) below which the candidate fails (default 0.85)
  --base-url/--model an OpenAI-compatible server (with its /v1) and model; default the local model
                     (tao model up; started and stopped here when it is not running). A release's
                     settings.json TAO_LLM_MODEL wins over --model
  --concurrency N    runs at once (default 2: the local server's slots)
  --run-timeout-s N  how long to wait for one run's outcome (default 1200)
  --json             the report as one JSON document on stdout instead of tables
  --out FILE         also write that JSON document to FILE
  -h, --help         this text
  Progress lines go to stderr. Exit 0: passed; 1: the candidate broke a ticket the baseline solved
  (named), has a wrong run, or solved less than --min-solved, or the run failed; 2: a usage error.
  tao eval --from-log --release <folder> ...: the candidate against recorded runs instead (tao eval --from-log --help).`;

/** Where a candidate (or baseline) comes from: its label and the variables it stands for. */
export function releaseSource(spec: string): { label: string; variables: Record<string, string> } {
  // A published manifest digest goes here too once manifests exist (docs/RELEASES.md).
  return { label: resolve(spec), variables: releaseEnv(spec) };
}

/** Runs `tao eval <args>`; resolves with the exit code. `usage` is printed with `--help` and after a usage error. */
export async function evalCommand(args: string[], usage = EVAL_USAGE): Promise<number> {
  // `--from-log` (a candidate against recorded runs) is cli/eval-from-log.ts's.
  if (args.includes('--from-log')) return (await import('./eval-from-log.ts')).main(args);
  const flags = commandFlags(
    args,
    {
      release: { type: 'string' },
      baseline: { type: 'string' },
      set: { type: 'string' },
      only: { type: 'string' },
      'min-solved': { type: 'string', default: '0.85' },
      'base-url': { type: 'string' },
      model: { type: 'string' },
      concurrency: { type: 'string', default: '2' },
      'run-timeout-s': { type: 'string', default: '1200' },
      json: { type: 'boolean', default: false },
      out: { type: 'string' },
    },
    usage,
  );
  if (flags === 0 || flags === 2) return flags;
  const v = flags.values;
  const bad = (problem: string) => usageError(`tao eval: ${problem}`, usage);
  if (v.release === undefined) return bad('--release <folder> is required: the candidate release');
  if ((v['base-url'] === undefined) !== (v.model === undefined)) return bad('--base-url and --model go together');
  const minSolved = Number(v['min-solved']);
  if (!(v['min-solved']!.trim() !== '' && minSolved >= 0 && minSolved <= 1)) return bad(`--min-solved must be a number from 0 to 1, got "${v['min-solved']}"`);
  const concurrency = Number(v.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) return bad(`--concurrency must be an integer >= 1, got "${v.concurrency}"`);
  const runTimeoutS = Number(v['run-timeout-s']);
  if (!Number.isInteger(runTimeoutS) || runTimeoutS < 1) return bad(`--run-timeout-s must be an integer >= 1, got "${v['run-timeout-s']}"`);
  const { loadRegressionSet, REGRESSION_SET_FILE } = await import('../eval/regression-set.ts');
  const setFile = v.set ?? REGRESSION_SET_FILE;
  if (!existsSync(setFile)) return bad(`--set: no such file ${setFile}`);
  let all;
  try {
    all = loadRegressionSet(setFile);
    if (!Array.isArray(all) || all.length === 0 || !all.every((t) => typeof t?.id === 'string' && typeof t.text === 'string'))
      throw new Error('"tickets" must be a non-empty array of tickets with an id and a text');
  } catch (err) {
    return bad(`--set ${setFile}: ${(err as Error).message}`);
  }
  const only = v.only?.split(',').map((s) => s.trim());
  const unknown = only?.filter((id) => !all.some((t) => t.id === id)) ?? [];
  if (unknown.length) return bad(`--only: no ticket ${unknown.join(', ')} in ${setFile}`);
  const tickets = only ? all.filter((t) => only.includes(t.id)) : all;
  let candidate: ReturnType<typeof releaseSource>;
  let baseline: ReturnType<typeof releaseSource> | null = null;
  try {
    candidate = releaseSource(v.release);
    if (v.baseline !== undefined) baseline = releaseSource(v.baseline);
  } catch (err) {
    if (err instanceof TaoError) return bad(err.message);
    throw err;
  }

  const { progress } = await import('../eval/fleet.ts');
  const { runSet, stopOnSignals, stoppedBy } = await import('../eval/run-set.ts');
  const { compare } = await import('../eval/compare.ts');
  const { reportJson, reportText } = await import('../eval/report.ts');
  const since = Date.now();
  const say = (line: string) => progress(since, line);
  let baseUrl = v['base-url'];
  let model = v.model;
  let stopModel = async () => {};
  stopOnSignals(say, () => stopModel());
  try {
    if (baseUrl === undefined || model === undefined) {
      const endpoint = await (await import('./model-endpoint.ts')).modelEndpoint(baseUrl, model, say, process.env);
      baseUrl = endpoint.baseUrl;
      model = endpoint.model;
      stopModel = () => endpoint.stop();
    }
    const common = { env: process.env, tickets, baseUrl, model, concurrency, runTimeoutMs: runTimeoutS * 1000 };
    let before = null;
    if (baseline) {
      say(`baseline ${baseline.label}`);
      before = await runSet({ ...common, release: baseline.variables, prefix: 'eval-base-', say: (l) => say(`baseline: ${l}`) });
    }
    say(`candidate ${candidate.label}`);
    const after = await runSet({ ...common, release: candidate.variables, prefix: 'eval-cand-', say: (l) => say(`candidate: ${l}`) });
    const verdict = compare(after, before, minSolved);
    const info = {
      model: after.model,
      baseUrl,
      started: before?.started ?? after.started,
      load: after.load,
      candidate: candidate.label,
      baseline: baseline?.label ?? null,
    };
    const doc = JSON.stringify(reportJson(info, verdict, after.scored, minSolved), null, 2);
    if (v.out !== undefined) writeFileSync(v.out, `${doc}\n`);
    console.log(v.json ? doc : reportText(info, verdict, after.scored, minSolved));
    if (!verdict.passed) say(`FAILED: ${verdict.broke.length ? `broke ${verdict.broke.join(', ')}` : 'see the report'}`);
    return verdict.passed ? 0 : 1;
  } catch (err) {
    const signal = stoppedBy();
    console.error(`tao eval: ${signal ? `stopped by ${signal}` : (err as Error).message}`);
    return signal ? 130 : 1;
  } finally {
    await stopModel();
  }
}

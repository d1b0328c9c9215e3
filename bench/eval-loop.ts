/**
 * `npm run models:eval-loop`: the regression set (eval/regression-tickets.json) through the real loop
 * on the real broker, scored: `tao eval` (cli/eval-command.ts, eval/) with this checkout's parts as
 * the release. `--tool-calls native|json_schema` sets TAO_LLM_TOOL_CALLS (default json_schema); every
 * other flag is `tao eval`'s (`--base-url/--model`, `--only`, `--concurrency`, `--min-solved`,
 * `--run-timeout-s`, `--json`, `--out`, `--baseline`). Exits 1 when a run is wrong or the solved
 * share is below --min-solved, 2 on a usage error.
 */
import { evalCommand, EVAL_USAGE } from '../cli/eval-command.ts';
import { PACKAGE_ROOT } from '../runtime/paths.ts';

const USAGE = `usage: npm run models:eval-loop -- [--tool-calls native|json_schema] [tao eval's flags but --release]
  tao eval --release <this checkout> (its skills/, flows/ and the deployment's catalog and rules).
  --tool-calls  how the model's turns ask for tools (TAO_LLM_TOOL_CALLS; default json_schema)
${EVAL_USAGE}`;

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const at = argv.indexOf('--tool-calls');
const toolCalls = at === -1 ? 'json_schema' : argv[at + 1];
if (toolCalls !== 'native' && toolCalls !== 'json_schema') {
  console.error(`models:eval-loop: --tool-calls must be native or json_schema, got "${toolCalls ?? ''}"\n${USAGE}`);
  process.exit(2);
}
if (at !== -1) argv.splice(at, 2);
if (argv.includes('--release')) {
  console.error(`models:eval-loop: the release is this checkout; use tao eval for another\n${USAGE}`);
  process.exit(2);
}
process.env.TAO_LOG_LEVEL = 'error'; // this process's own log lines (topics apply) off stdout, where the tables go
process.env.TAO_LLM_TOOL_CALLS = toolCalls;
process.exit(await evalCommand(['--release', PACKAGE_ROOT, ...argv], USAGE));

/**
 * `tao config` and the start-up check of every `tao` process's environment, both over the
 * declarations of runtime/config.ts.
 */
import { parseArgs } from 'node:util';
import { checkEnvironment, effectiveConfig, environmentProblems, setting } from '../runtime/config.ts';
import { DEFAULT_CATALOG_DIR, catalogVariableNames } from '../tools/catalog.ts';

export const CONFIG_USAGE = `usage: tao config [--json]
  Prints the effective configuration: every variable the product reads (runtime/config.ts), its
  value and where it comes from (env, default, unset). Secrets are shown as ***.
  Then lists every problem of the environment (a value that does not parse, an unknown TAO_* name)
  on stderr, one a line, and exits 1 if there is any.
  --json   {"settings": [{name, kind, value, defaultNote, source, secret, meaning, usedBy}], "problems": [...]}`;

/** Names the tool catalog references (`${NAME}`): known variables, though not declared in runtime/config.ts. */
function catalogNames(env: NodeJS.ProcessEnv): string[] {
  return catalogVariableNames(setting(env, 'TAO_TOOL_CATALOG_DIR') ?? DEFAULT_CATALOG_DIR);
}

/**
 * The start-up check every `tao` command runs before it does anything.
 * @throws ConfigError with one line naming each bad variable and its value, or each unknown `TAO_*` name.
 */
export function checkStartupEnvironment(env: NodeJS.ProcessEnv): void {
  checkEnvironment(env, { alsoKnown: catalogNames(env) });
}

/** `tao config [--json]`; resolves with the exit code (1 when the environment has a problem). */
export async function configCommand(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: (text: string) => void = (t) => process.stdout.write(t),
  err: (text: string) => void = (t) => process.stderr.write(t),
): Promise<number> {
  let values: { json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({ args: argv, options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (e) {
    err(`${(e as Error).message}\n${CONFIG_USAGE}\n`);
    return 2;
  }
  if (values.help) {
    out(`${CONFIG_USAGE}\n`);
    return 0;
  }
  const settings = effectiveConfig(env);
  const problems = environmentProblems(env, { alsoKnown: catalogNames(env) });
  if (values.json) {
    out(`${JSON.stringify({ settings, problems }, null, 2)}\n`);
  } else {
    const shown = settings.map((s) => ({ name: s.name, value: s.value ?? (s.defaultNote ? `(${s.defaultNote})` : ''), source: s.source }));
    const width = Math.max(...shown.map((s) => s.name.length)) + 2;
    const valueWidth = Math.min(40, Math.max(...shown.map((s) => s.value.length))) + 2;
    const cell = (text: string) => (text.length + 2 > valueWidth ? `${text}  ` : text.padEnd(valueWidth));
    const lines = shown.map((s) => `${s.name.padEnd(width)}${cell(s.value)}${s.source}`);
    out(`${'variable'.padEnd(width)}${'value'.padEnd(valueWidth)}source\n${lines.join('\n')}\n`);
  }
  for (const p of problems) err(`${p}\n`);
  return problems.length ? 1 : 0;
}

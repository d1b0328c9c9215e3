/**
 * The flags of a long-running command (`tao run model-sim`, `tao run mcp-tools`, `tao tail`, `tao
 * status`): parsed strictly against its usage text, `--help` answered, and the checks several of them
 * share. A usage error prints the problem and the usage to stderr and ends the command with exit code 2.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

type FlagOptions = NonNullable<ParseArgsConfig['options']>;

/** The values `parseArgs` gives for `options` (no positionals allowed). */
export type FlagValues<O extends FlagOptions> = ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>>['values'];

/** Prints `problem` and the usage `text` to stderr; returns 2, the exit code of a usage error. */
export function usageError(problem: string, text: string): 2 {
  console.error(`${problem}\n${text}`);
  return 2;
}

/**
 * Parses `args` strictly (an unknown flag, a missing value or a positional is a usage error) with
 * `-h`/`--help` added. Returns the values, or the exit code the command ends with: 0 once `--help`
 * printed the usage to stdout, 2 after a usage error.
 */
export function commandFlags<const O extends FlagOptions>(args: string[], options: O, usage: string): { values: FlagValues<O> } | 0 | 2 {
  let values;
  try {
    const all: FlagOptions = { ...options, help: { type: 'boolean', short: 'h' } };
    ({ values } = parseArgs({ args, strict: true, allowPositionals: false, options: all }));
  } catch (err) {
    return usageError((err as Error).message, usage);
  }
  if (values.help) {
    console.log(usage);
    return 0;
  }
  return { values: values as FlagValues<O> };
}

/**
 * A whole-number flag's value: undefined when the flag is absent.
 * @throws RangeError naming the flag when `value` is not a whole number from `min` to `max`.
 */
export function intFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new RangeError(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * The secret a flag such as `--api-key-env NAME` points to: the value of the environment variable
 * `variable` (undefined when the flag is absent).
 * @throws RangeError naming the flag when that variable is unset or empty.
 */
export function secretFromEnv(flag: string, variable: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (variable === undefined) return undefined;
  const value = env[variable];
  if (!value) throw new RangeError(`--${flag}: environment variable ${variable} is not set or empty`);
  return value;
}

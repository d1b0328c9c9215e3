import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * The options of a bench command (`npm run chaos`, `soak`, `bench:startup`, `models:bench`,
 * bench/profile.ts, bench/bad-inputs.ts): `--help`/`-h` prints `usage` and exits 0; an unknown
 * option or a missing value prints node's message naming it, then `usage`, and exits 2 (no stack trace).
 */
export function commandOptions<O extends NonNullable<ParseArgsConfig['options']>>(command: string, usage: string, options: O, argv = process.argv.slice(2)) {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage);
    process.exit(0);
  }
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    console.error(`${command}: ${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
}

/** A bad option value: one line naming it, then `usage`, exit 2. */
export function usageError(command: string, usage: string, message: string): never {
  console.error(`${command}: ${message}\n${usage}`);
  process.exit(2);
}

/** The integer option `--name` (its text in `values`), at least `min`; otherwise a {@link usageError}. */
export function integerOption(command: string, usage: string, values: Record<string, unknown>, name: string, min: number): number {
  const text = values[name];
  const n = Number(text);
  return typeof text === 'string' && text.trim() !== '' && Number.isInteger(n) && n >= min
    ? n
    : usageError(command, usage, `--${name} must be an integer >= ${min}, got "${String(text)}"`);
}

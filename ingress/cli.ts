/**
 * `tao ingress key`: makes an API key for `POST /v1/tasks` and the entry that configures it.
 */
import { parseArgs } from 'node:util';
import { API_KEY_SCOPES, NAME, hashApiKey, newApiKey, parseApiKeys, type ApiKeyEntry } from './api-keys.ts';

export const INGRESS_USAGE = `usage: tao ingress key --id <id> --sources <list|*> [--scopes tasks,console,approve] [--rate-per-minute 60] [--burst n] [--note "..."] [--json]
  Makes a new random API key for POST /v1/tasks and prints it ONCE (give it to the client; it is
  stored nowhere), then the entry to add to the "keys" array of TAO_INGRESS_KEYS_FILE (it holds only
  the key's SHA-256). Restart the ingress to load it. See docs/INGRESS.md (rotate, revoke).
  --id               the key's name in logs and metrics (lower case letters, digits, _ . -)
  --sources          task sources the key may submit as, comma-separated, or * for any
  --scopes           what the key may do, comma-separated: tasks (POST /v1/tasks, the default),
                     console (the operator console, tao ui; its sources are not used), approve
                     (POST /v1/runs/<id>/approve|deny; with console: the console's approve, deny and reply)
  --rate-per-minute  token-bucket refill (default 60)
  --burst            bucket size (default: the rate per minute)
  --note             free text kept in the entry (who holds the key)
  --json             print {"key", "entry"} as one JSON line instead`;

/** Where the command writes (the process's streams by default; tests pass their own). */
export interface IngressCliIo {
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
}

/** Runs `tao ingress <args>`; resolves with the exit code (2 for a usage error). */
export async function ingressCommand(argv: string[], io: IngressCliIo = {}): Promise<number> {
  const out = io.stdout ?? ((t: string) => process.stdout.write(t));
  const err = io.stderr ?? ((t: string) => process.stderr.write(t));
  const usage = (problem: string) => {
    err(`tao ingress: ${problem}\n${INGRESS_USAGE}\n`);
    return 2;
  };
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        id: { type: 'string' },
        sources: { type: 'string' },
        'rate-per-minute': { type: 'string', default: '60' },
        burst: { type: 'string' },
        scopes: { type: 'string' },
        note: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (e) {
    return usage((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1 || positionals[0] !== 'key') return usage(`unknown ingress command "${positionals.join(' ')}" (the one command is: key)`);
  const name = new RegExp(NAME);
  if (!values.id || !name.test(values.id)) return usage(`key needs --id <id>: lower case letters, digits, _ . - (up to 64), got "${values.id ?? ''}"`);
  const sources = (values.sources ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const badSource = sources.find((s) => s !== '*' && !name.test(s));
  if (!sources.length || badSource !== undefined)
    return usage(`key needs --sources: comma-separated source names (lower case letters, digits, _ . -) or *, got "${values.sources ?? ''}"`);
  const rate = Number(values['rate-per-minute']);
  if (!(rate > 0 && rate <= 1_000_000)) return usage(`--rate-per-minute must be a number > 0 and <= 1000000, got "${values['rate-per-minute']}"`);
  const burst = values.burst === undefined ? undefined : Number(values.burst);
  if (burst !== undefined && !(Number.isInteger(burst) && burst >= 1 && burst <= 1_000_000))
    return usage(`--burst must be an integer from 1 to 1000000, got "${values.burst}"`);
  if (values.note !== undefined && values.note.length > 500) return usage('--note must be at most 500 characters');
  const scopes =
    values.scopes === undefined
      ? undefined
      : [
          ...new Set(
            values.scopes
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          ),
        ];
  if (scopes && (!scopes.length || scopes.some((s) => !(API_KEY_SCOPES as readonly string[]).includes(s))))
    return usage(`--scopes must be a comma-separated list of ${API_KEY_SCOPES.join(', ')}, got "${values.scopes}"`);

  const key = newApiKey();
  const entry: ApiKeyEntry = { id: values.id, sha256: hashApiKey(key), sources: [...new Set(sources)], rate_per_minute: rate };
  if (burst !== undefined) entry.burst = burst;
  if (scopes !== undefined) entry.scopes = scopes as ApiKeyEntry['scopes'];
  if (values.note !== undefined) entry.note = values.note;
  // The ingress's own validation: an entry printed here is one it accepts (throws if the checks above drifted).
  parseApiKeys(JSON.stringify([entry]), 'the new entry');
  if (values.json) {
    out(`${JSON.stringify({ key, entry })}\n`);
    return 0;
  }
  out(
    `API key "${entry.id}" (give it to the client now: it is shown only this once and stored nowhere):\n${key}\n\n` +
      `Entry for the "keys" array of TAO_INGRESS_KEYS_FILE (only the key's SHA-256; restart the ingress to load it):\n${JSON.stringify(entry)}\n`,
  );
  return 0;
}

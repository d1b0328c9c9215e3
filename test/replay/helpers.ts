/** Helpers of the replay tests: CLI calls with captured output, and headless Chromium. */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CliIo } from '../../replay/cli.ts';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `replayCommand` / `dlqCommand` in this process with `env`, capturing what it prints. */
export async function runCli(command: (argv: string[], io?: CliIo) => Promise<number>, argv: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await command(argv, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

/**
 * `tao replay <id> --verify --format json` in this process with no model configured (the caller has
 * stopped the model server): Thought's decisions are re-made from the recorded answers alone.
 */
export async function verifyWithoutModel(id: string, env: NodeJS.ProcessEnv): Promise<{ run: CliRun; drift: boolean | null }> {
  const { replayCommand } = await import('../../replay/cli.ts');
  const run = await runCli(replayCommand, [id, '--verify', '--format', 'json'], { ...env, TAO_PLANNER: 'graph', TAO_LLM_BASE_URL: '' });
  return { run, drift: run.code === 0 ? (JSON.parse(run.stdout) as { drift: boolean }).drift : null };
}

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Opens `file` in headless Chromium and returns the DOM after load (`--dump-dom`), writing a
 * screenshot to `screenshot` when given.
 * @throws when Chromium is not installed, saying how to install it.
 */
export async function chromium(file: string, screenshot?: string): Promise<string> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: the HTML report test needs headless Chromium (Debian package). Install it with: apt-get update && apt-get install -y chromium`,
    );
  const profile = mkdtempSync(join(tmpdir(), 'tao-chromium-'));
  const flags = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-dev-shm-usage',
    `--user-data-dir=${profile}`,
  ];
  const run = promisify(execFile);
  try {
    const { stdout } = await run(CHROMIUM, [...flags, '--dump-dom', `file://${file}`], { maxBuffer: 32 * 1024 * 1024, timeout: 60000 });
    if (screenshot)
      await run(CHROMIUM, [...flags, `--screenshot=${screenshot}`, '--window-size=1400,1800', '--hide-scrollbars', `file://${file}`], { timeout: 60000 });
    return stdout;
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

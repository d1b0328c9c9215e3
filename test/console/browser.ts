/** Helpers of the console tests: headless Chromium through playwright-core, and where screenshots go. */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM } from '../replay/helpers.ts';

/** Where the tests write the console's screenshots (committed: docs/CONSOLE.md shows them). */
export const SCREENSHOTS = new URL('../../docs/console/', import.meta.url).pathname;

/**
 * The Debian chromium, headless, driven over the DevTools protocol.
 * @throws when Chromium is not installed, saying how to install it.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: the console tests need headless Chromium (Debian packages chromium, fonts-noto-cjk). Install them with: apt-get update && apt-get install -y chromium fonts-noto-cjk`,
    );
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** The ops URLs of the stages a test fleet started (from their "stage started" lines). */
export function opsEndpoints(lines: readonly string[]): string[] {
  return lines.flatMap((l) => {
    const m = /"msg":"stage started".*"ops_port":(\d+)/.exec(l) ?? /"ops_port":(\d+).*"msg":"stage started"/.exec(l);
    return m ? [`http://127.0.0.1:${m[1]}`] : [];
  });
}

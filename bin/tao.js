#!/usr/bin/env node
// Entry point of the `tao` command. Runs the compiled CLI in dist/ (`npm run build`) when it is
// there, and the TypeScript sources through tsx's loader otherwise. In a development tree (tsx
// installed) a dist/ older than any source it was built from is ignored, so an edit takes effect
// without a rebuild; a production install (`npm ci --omit=dev`, no tsx) always runs dist/.
// TAO_RUN_FROM=dist|source forces one of the two. Child stages (`run all`, the demo) are started
// through this file too, so they make the same choice.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compiledEntry, distIsCurrent } from './dist-state.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = compiledEntry(root);

function fail(message) {
  console.error(`tao: ${message}`);
  process.exit(1);
}

function tsxInstalled() {
  try {
    createRequire(import.meta.url).resolve('tsx/esm/api');
    return true;
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND') return false;
    throw err;
  }
}

function chooseCode() {
  const forced = process.env.TAO_RUN_FROM || undefined; // empty means unset
  if (forced !== undefined && forced !== 'dist' && forced !== 'source') fail(`TAO_RUN_FROM must be "dist" or "source", not "${forced}"`);
  if (forced === 'dist' && !existsSync(compiled)) fail(`TAO_RUN_FROM=dist but ${compiled} does not exist: run \`npm run build\``);
  if (forced) return forced;
  if (!existsSync(compiled)) return 'source';
  if (!tsxInstalled()) return 'dist';
  return distIsCurrent(root) ? 'dist' : 'source';
}

// `tao ui` runs with the console's own V8 flags (bin/console-node-flags.json): a 1 MiB young
// generation and a 256 MiB old space hold its memory near 90 MiB with 10,000 runs indexed, where
// V8's defaults let the index's rebuild take it past 150 MiB (docs/CONSOLE.md, Memory and time).
// Node takes these flags only at start, so a `tao ui` started without them starts the console
// again with them, passes SIGINT and SIGTERM on, and exits as it does.
if (process.argv[2] === 'ui') {
  const flags = JSON.parse(readFileSync(join(root, 'bin', 'console-node-flags.json'), 'utf8'));
  if (!flags.every((flag) => process.execArgv.includes(flag))) {
    const child = spawn(process.execPath, [...process.execArgv, ...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
    for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
    child.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 143)));
    await new Promise(() => {}); // the console runs in the child
  }
}

let main;
if (chooseCode() === 'dist') {
  ({ main } = await import(pathToFileURL(compiled).href));
} else {
  if (!tsxInstalled()) {
    fail(
      `tsx, which runs the TypeScript sources, is not installed and ${existsSync(compiled) ? 'TAO_RUN_FROM=source asks for them' : 'dist/ is missing'}: run \`npm run build\` in a development install (\`npm ci\`) first`,
    );
  }
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
main(process.argv.slice(2)).then(
  (code) => {
    // -1: a long-running process (a stage, a server) that exits from its signal handler.
    if (code >= 0) process.exit(code);
  },
  (err) => {
    console.error(`tao: ${err instanceof Error ? err.message : String(err)}${err && err.code ? ` [${err.code}]` : ''}`);
    process.exit(1);
  },
);

#!/usr/bin/env node
// Entry point of the `tao` command. Runs the compiled CLI in dist/ (`npm run build`) when it is
// there, and the TypeScript sources through tsx's loader otherwise. In a development tree (tsx
// installed) a dist/ older than any source it was built from is ignored, so an edit takes effect
// without a rebuild; a production install (`npm ci --omit=dev`, no tsx) always runs dist/.
// TAO_RUN_FROM=dist|source forces one of the two. Child stages (`run all`, the demo) are started
// through this file too, so they make the same choice.
import { existsSync } from 'node:fs';
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

let main;
if (chooseCode() === 'dist') {
  ({ main } = await import(pathToFileURL(compiled).href));
} else {
  if (!tsxInstalled()) {
    fail(`tsx, which runs the TypeScript sources, is not installed and ${existsSync(compiled) ? 'TAO_RUN_FROM=source asks for them' : 'dist/ is missing'}: run \`npm run build\` in a development install (\`npm ci\`) first`);
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

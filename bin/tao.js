#!/usr/bin/env node
// Entry point of the `tao` command: runs the TypeScript CLI through tsx's loader.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
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

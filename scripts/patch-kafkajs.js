#!/usr/bin/env node
/**
 * Applies the unified diffs in patches/kafkajs/ to node_modules/kafkajs (run by `npm install` /
 * `npm ci` as postinstall). The diffs are made against kafkajs 2.2.4, the exact version package.json
 * pins; a hunk whose lines are not exactly where the diff says fails here, loudly, instead of
 * patching another version blindly. Idempotent: a file the diff has already been applied to is
 * left alone. See patches/README.md for why each patch exists.
 *
 * To change a patch: edit node_modules/kafkajs/<file>, then
 * `diff -u --label a/<file> --label b/<file> <pristine 2.2.4 file> node_modules/kafkajs/<file> > patches/kafkajs/<name>.diff`
 * (the pristine file: `npm pack kafkajs@2.2.4` and untar it).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSION = '2.2.4';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const kafkajs = join(root, 'node_modules', 'kafkajs');
const patchDir = join(root, 'patches', 'kafkajs');

/** A unified diff's target file (from its `+++ b/<file>` line) and hunks. */
function parseDiff(text, name) {
  const lines = text.split('\n');
  const target = /^\+\+\+ b\/(\S+)/m.exec(text)?.[1];
  if (!target) throw new Error(`${name}: no "+++ b/<file>" line`);
  const hunks = [];
  for (let i = 0; i < lines.length; i++) {
    const head = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(lines[i]);
    if (!head) continue;
    const hunk = { oldStart: Number(head[1]), newStart: Number(head[2]), lines: [] };
    for (i += 1; i < lines.length && /^[ +\-\\]/.test(lines[i]); i++) if (lines[i][0] !== '\\') hunk.lines.push(lines[i]);
    i -= 1;
    hunks.push(hunk);
  }
  if (hunks.length === 0) throw new Error(`${name}: no hunks`);
  return { target, hunks };
}

/**
 * The file with the hunks applied (or, with `reverse`, un-applied); null when any hunk's context or
 * removed lines are not exactly at the line the diff gives.
 */
function apply(text, hunks, reverse) {
  const [del, add, startOf] = reverse ? ['+', '-', (h) => h.newStart] : ['-', '+', (h) => h.oldStart];
  const src = text.split('\n');
  const out = [];
  let next = 0; // the first source line not yet copied
  for (const hunk of hunks) {
    const start = startOf(hunk) - 1 + (hunk.lines.every((l) => l[0] === add) ? 1 : 0);
    if (start < next) return null;
    out.push(...src.slice(next, start));
    let at = start;
    for (const line of hunk.lines) {
      if (line[0] === add) {
        out.push(line.slice(1));
        continue;
      }
      if (src[at] !== line.slice(1)) return null;
      if (line[0] !== del) out.push(src[at]);
      at += 1;
    }
    next = at;
  }
  out.push(...src.slice(next));
  return out.join('\n');
}

if (!existsSync(join(kafkajs, 'package.json'))) {
  console.log('patch-kafkajs: kafkajs is not installed; nothing to patch');
  process.exit(0);
}
const installed = JSON.parse(readFileSync(join(kafkajs, 'package.json'), 'utf8')).version;
if (installed !== VERSION) {
  console.error(
    `patch-kafkajs: kafkajs ${installed} is installed; patches/kafkajs/ is made for ${VERSION}, the version package.json pins. Check whether the new version still needs each patch and port them (see patches/README.md)`,
  );
  process.exit(1);
}
for (const name of readdirSync(patchDir)
  .filter((n) => n.endsWith('.diff'))
  .sort()) {
  const { target, hunks } = parseDiff(readFileSync(join(patchDir, name), 'utf8'), name);
  const path = join(kafkajs, target);
  const current = readFileSync(path, 'utf8');
  if (apply(current, hunks, true) !== null) continue; // already applied
  const patched = apply(current, hunks, false);
  if (patched === null) {
    console.error(
      `patch-kafkajs: patches/kafkajs/${name} does not apply to node_modules/kafkajs/${target} (kafkajs ${VERSION}, changed since it was installed, or patched by an older version of this script): reinstall it with \`npm ci\``,
    );
    process.exit(1);
  }
  writeFileSync(path, patched);
  console.log(`patch-kafkajs: applied ${name} to ${target}`);
}

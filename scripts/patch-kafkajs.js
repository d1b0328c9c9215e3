#!/usr/bin/env node
/**
 * Applies patches/kafkajs/ to node_modules/kafkajs (run by `npm install` / `npm ci` as postinstall).
 * Each patched file replaces kafkajs's own only when that file is exactly the one the patch was
 * made for (by SHA-256), so a different kafkajs version fails here, loudly, instead of being patched
 * blindly. Idempotent. See patches/README.md for why.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const kafkajs = join(root, 'node_modules', 'kafkajs');
const PATCHES = [
  {
    file: 'src/consumer/filterAbortedMessages.js',
    original: '54ce50f2a41ee1686da8b73bf8b502c7dd07c9d7cb0a494cdb36a7fc536ced8e',
    patch: join(root, 'patches', 'kafkajs', 'filterAbortedMessages.js'),
  },
  {
    file: 'src/producer/sendMessages.js',
    original: '8a120e6993955e040a13014cccebd79b8d41e7355d6eda1065fa83fea2fbbcdb',
    patch: join(root, 'patches', 'kafkajs', 'sendMessages.js'),
  },
  {
    file: 'src/network/requestQueue/index.js',
    original: 'b55986089c14f8f7bfc377922e2e65b3e4c1e7c7af2752d3b10a75dfe9e9260c',
    patch: join(root, 'patches', 'kafkajs', 'requestQueue.js'),
  },
  {
    file: 'src/producer/eosManager/index.js',
    original: 'a74ae029d7aa786b8616b77f922d30a81bec2833878769dbfa6b4a9dab66db22',
    patch: join(root, 'patches', 'kafkajs', 'eosManager.js'),
  },
];

if (!existsSync(join(kafkajs, 'package.json'))) {
  console.log('patch-kafkajs: kafkajs is not installed; nothing to patch');
  process.exit(0);
}
const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const firstLine = (data) => data.subarray(0, data.indexOf(10)).toString('utf8');
for (const { file, original, patch } of PATCHES) {
  const target = join(kafkajs, file);
  const current = readFileSync(target);
  const wanted = readFileSync(patch);
  if (current.equals(wanted)) continue;
  // An earlier version of the same patch (its first line is the patch's marker) is replaced too.
  const earlierPatch = firstLine(current).startsWith('// tao-patch:') && firstLine(current) === firstLine(wanted);
  if (!earlierPatch && sha256(current) !== original) {
    console.error(
      `patch-kafkajs: ${target} is not the kafkajs 2.2.4 file the patch was made for (sha256 ${sha256(current)}); check whether the new kafkajs still needs patches/kafkajs/ (see patches/README.md) and update scripts/patch-kafkajs.js`,
    );
    process.exit(1);
  }
  writeFileSync(target, wanted);
  console.log(`patch-kafkajs: patched ${file}`);
}

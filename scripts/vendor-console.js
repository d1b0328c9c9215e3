#!/usr/bin/env node
// Copies the console's browser libraries from node_modules (devDependencies, pinned in
// package-lock.json) into console/static/vendor/, where `tao ui` serves them. The copies are
// committed, so a production install needs no dev dependency and the stages load none of it.
// Run after upgrading one of them: npm run console:vendor (test/console/vendor.test.ts checks the
// copies match the installed packages).
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const VENDORED = [
  ['node_modules/uplot/dist/uPlot.iife.min.js', 'uplot.iife.min.js'],
  ['node_modules/uplot/dist/uPlot.min.css', 'uplot.min.css'],
  ['node_modules/uplot/LICENSE', 'uplot.LICENSE.txt'],
];

const out = join(root, 'console/static/vendor');
mkdirSync(out, { recursive: true });
for (const [from, to] of VENDORED) {
  copyFileSync(join(root, from), join(out, to));
  console.log(`vendored ${from} -> console/static/vendor/${to}`);
}

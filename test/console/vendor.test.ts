import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url).pathname;

test('the console serves the installed uPlot: the vendored copies match node_modules (npm run console:vendor after an upgrade)', () => {
  for (const [installed, vendored] of [
    ['node_modules/uplot/dist/uPlot.iife.min.js', 'console/static/vendor/uplot.iife.min.js'],
    ['node_modules/uplot/dist/uPlot.min.css', 'console/static/vendor/uplot.min.css'],
    ['node_modules/uplot/LICENSE', 'console/static/vendor/uplot.LICENSE.txt'],
  ])
    assert.ok(readFileSync(`${root}${installed}`).equals(readFileSync(`${root}${vendored}`)), `${vendored} is not ${installed}`);
});

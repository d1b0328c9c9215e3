import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

// bin/tao.js in a package folder with neither dist/ nor node_modules (so no tsx): what it says.
const pkg = mkdtempSync(join(tmpdir(), 'tao-bin-'));
cpSync(join(PACKAGE_ROOT, 'bin'), join(pkg, 'bin'), { recursive: true });
cpSync(join(PACKAGE_ROOT, 'package.json'), join(pkg, 'package.json'));
after(() => rmSync(pkg, { recursive: true, force: true }));

async function tao(env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return promisify(execFile)(process.execPath, [join(pkg, 'bin', 'tao.js'), '--help'], { env: { ...process.env, ...env } }).then(
    () => assert.fail('tao --help succeeded with neither dist/ nor tsx'),
    (err: { code: number; stderr: string }) => err,
  );
}

test('with neither dist/ nor tsx, `tao` says in one line to build in a development install', async () => {
  const { code, stderr } = await tao({ TAO_RUN_FROM: '' });
  assert.equal(code, 1);
  assert.equal(
    stderr,
    'tao: tsx, which runs the TypeScript sources, is not installed and dist/ is missing: run `npm run build` in a development install (`npm ci`) first\n',
  );
});

test('TAO_RUN_FROM is dist or source; dist without a build, or another value, is refused in one line', async () => {
  const missing = await tao({ TAO_RUN_FROM: 'dist' });
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, `tao: TAO_RUN_FROM=dist but ${join(pkg, 'dist', 'cli', 'main.js')} does not exist: run \`npm run build\`\n`);
  const bad = await tao({ TAO_RUN_FROM: 'compiled' });
  assert.equal(bad.code, 1);
  assert.equal(bad.stderr, 'tao: TAO_RUN_FROM must be "dist" or "source", not "compiled"\n');
});

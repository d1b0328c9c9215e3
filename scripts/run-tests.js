#!/usr/bin/env node
// `npm test`: type-check, check generated types, make sure a broker and a registry are there
// (starting the local ones through infra/ when KAFKA_BROKERS is unset), prepare the Python venv for
// the interop test, then run every test/**/*.test.ts with node's test runner, one file at a time.
//
//   npm test                      everything
//   npm test -- test/loop         only files under a path
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const env = { ...process.env };
const step = (msg) => console.log(`\n== ${msg}`);
const run = (cmd, args, options = {}) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env, ...options });
  if (r.status !== 0) {
    console.error(`npm test: \`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status || 1);
  }
};

step('type-check (tsc --noEmit)');
run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', root]);
run(process.execPath, ['--import', 'tsx', 'scripts/gen-types.ts', '--check']);

if (!env.KAFKA_BROKERS && env.TAO_INFRA) { // TAO_INFRA=docker|local: infra/mode.ts starts it in this process (containers end with it)
  (await import('tsx/esm/api')).register();
  ({ brokers: env.KAFKA_BROKERS, registryUrl: env.SCHEMA_REGISTRY_URL } = await (await import('../infra/mode.ts')).startInfra(env.TAO_INFRA).catch((err) => { console.error(`npm test: ${err.message}`); process.exit(1); }));
}
if (!env.KAFKA_BROKERS) {
  step('KAFKA_BROKERS is not set: starting local Kafka and schema registry (npx tao infra up)');
  const out = execFileSync(process.execPath, [join(root, 'bin/tao.js'), 'infra', 'up'], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] }).toString();
  process.stdout.write(out);
  for (const line of out.split('\n')) {
    const m = /^(KAFKA_BROKERS|SCHEMA_REGISTRY_URL)=(.+)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  if (!env.KAFKA_BROKERS) {
    console.error('npm test: infra up did not print KAFKA_BROKERS');
    process.exit(1);
  }
} else {
  console.log(`\nusing KAFKA_BROKERS=${env.KAFKA_BROKERS} SCHEMA_REGISTRY_URL=${env.SCHEMA_REGISTRY_URL ?? '(default)'}`);
}

if (!env.TAO_INTEROP_PYTHON) {
  const venv = join(root, '.infra/interop-venv');
  const requirements = readFileSync(join(root, 'test/interop/requirements.txt'));
  const marker = join(venv, `.installed-${createHash('sha256').update(requirements).digest('hex').slice(0, 12)}`);
  if (!existsSync(marker)) {
    step('preparing the Python venv for the interop test (confluent-kafka from PyPI)');
    run('python3', ['-m', 'venv', venv]);
    run(join(venv, 'bin/pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', 'test/interop/requirements.txt']);
    writeFileSync(marker, '');
  }
  env.TAO_INTEROP_PYTHON = join(venv, 'bin/python');
}

const filters = process.argv.slice(2);
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.test.ts')) files.push(relative(root, path));
  }
};
walk(join(root, 'test'));
const selected = filters.length ? files.filter((f) => filters.some((p) => f.startsWith(p.replace(/^\.\//, '')))) : files;
if (selected.length === 0) {
  console.error(`npm test: no test file matches ${filters.join(' ')}`);
  process.exit(1);
}
step(`running ${selected.length} test files`);
// --test-force-exit: a failed test that leaks a connection must not keep its file (and CI) hanging.
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-force-exit', '--test-concurrency=1', '--test-reporter=spec', ...selected], { cwd: root, stdio: 'inherit', env });
process.exit(result.status ?? 1);

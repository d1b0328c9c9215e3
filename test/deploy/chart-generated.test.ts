/**
 * What the deployment files must keep in step with the code, checked without helm or podman: the
 * chart's generated parts (deploy/gen-chart.ts) are current; every declared variable is in the
 * chart or left out for a stated reason; the stages' input topics the chart scales on are the ones
 * the stages declare; the Containerfile compiles every folder tsconfig.build.json compiles and ships
 * every data folder the shipped code reads through runtime/paths.ts; deploy/compose.yaml runs known
 * processes with environments the configuration accepts.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { NOT_IN_CHART, STAGE_INPUTS, chartSettings, secretsOf } from '../../deploy/chart-settings.ts';
import { staleFiles, valuesBlock } from '../../deploy/gen-chart.ts';
import { STAGES } from '../../processors/stages.ts';
import { SETTINGS, environmentProblems, loadRuntimeConfig, type SettingName } from '../../runtime/config.ts';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';
import { TOPICS, type TopicId } from '../../topics/catalog.ts';

test("the chart's generated files are current (node --import tsx deploy/gen-chart.ts)", () => {
  assert.deepEqual(staleFiles(), [], 'run `npm run deploy:chart` (node --import tsx deploy/gen-chart.ts) and commit the result');
});

test('every declared variable is in the chart (config or secrets) or left out with a reason', () => {
  const { config, secrets, skipped } = chartSettings();
  const all = Object.keys(SETTINGS) as SettingName[];
  assert.deepEqual([...config, ...secrets, ...skipped.map((s) => s.name)].sort(), [...all].sort());
  for (const name of secrets) assert.equal(SETTINGS[name].kind, 'secret', name);
  for (const name of config) assert.notEqual(SETTINGS[name].kind, 'secret', name);
  for (const name of Object.keys(NOT_IN_CHART))
    assert.ok(
      skipped.some((s) => s.name === name),
      `${name} is listed as not in the chart`,
    );
  // Connection settings a cluster needs are carried.
  for (const name of [
    'KAFKA_BROKERS',
    'KAFKA_SSL',
    'KAFKA_SSL_CA_FILE',
    'KAFKA_SASL_MECHANISM',
    'KAFKA_SASL_USERNAME',
    'SCHEMA_REGISTRY_URL',
    'SCHEMA_REGISTRY_USERNAME',
    'TAO_NAMESPACE',
  ] as const)
    assert.ok(config.includes(name), name);
  for (const name of ['KAFKA_SASL_PASSWORD', 'SCHEMA_REGISTRY_PASSWORD'] as const) assert.ok(secrets.includes(name), name);
  const block = valuesBlock();
  for (const name of [...config, ...secrets]) assert.match(block, new RegExp(`^  ${name}: `, 'm'), name);
});

test('each process gets only the secrets it reads', () => {
  assert.ok(secretsOf('ingress').includes('TAO_INGRESS_API_KEYS'));
  assert.ok(!secretsOf('thought').includes('TAO_INGRESS_API_KEYS'));
  assert.ok(secretsOf('callbacks').includes('TAO_CALLBACK_SECRET'));
  assert.ok(!secretsOf('action').includes('TAO_CALLBACK_SECRET'));
  assert.ok(!secretsOf('topics').includes('TAO_CALLBACK_SECRET'));
  assert.deepEqual(secretsOf('tools'), [], 'the demo tool server connects to no Kafka');
  for (const p of ['thought', 'action', 'observation', 'ingress', 'callbacks', 'topics'] as const) assert.ok(secretsOf(p).includes('KAFKA_SASL_PASSWORD'), p);
});

test('the input topics KEDA scales on are the ones each stage declares', () => {
  const idOf = new Map(Object.entries(TOPICS).map(([id]) => [id, id as TopicId]));
  for (const stage of STAGES) {
    const source = readFileSync(join(PACKAGE_ROOT, 'processors', stage, 'stage.ts'), 'utf8');
    const m = /\binputs: \[([^\]]*)\]/.exec(source);
    assert.ok(m, `processors/${stage}/stage.ts declares its inputs`);
    const declared = [...m[1]!.matchAll(/'([A-Za-z]+)'/g)].map((x) => idOf.get(x[1]!));
    assert.deepEqual(declared, [...STAGE_INPUTS[stage]], stage);
  }
});

/** The Containerfile's instructions of one stage (`FROM ... AS name`, or the last FROM when name is null). */
function containerStage(name: string | null): string[] {
  const lines = readFileSync(join(PACKAGE_ROOT, 'deploy', 'Containerfile'), 'utf8').split('\n');
  const starts = lines.map((l, i) => (/^FROM /.test(l) ? i : -1)).filter((i) => i >= 0);
  const start = name === null ? starts.at(-1)! : starts.find((i) => new RegExp(` AS ${name}$`).test(lines[i]!))!;
  const end = starts.find((i) => i > start) ?? lines.length;
  return lines.slice(start, end).filter((l) => !l.startsWith('#'));
}

test('the Containerfile compiles what tsconfig.build.json compiles, and ships the data files the code reads', () => {
  const build = containerStage('build').join('\n');
  const include = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include;
  for (const dir of include) assert.match(build, new RegExp(`^COPY ${dir}/ ${dir}/$`, 'm'), `the build stage copies ${dir}/`);

  const runtime = containerStage(null);
  const copied = runtime.filter((l) => l.startsWith('COPY ') && !l.includes('--from=')).flatMap((l) => l.split(/\s+/).slice(1, -1));
  assert.ok(copied.includes('package.json') && copied.includes('bin/'), 'package.json ("type": "module") and bin/');
  // Every packagePath('<folder>', ...) in the shipped code must be in the image, but infra/ (tao infra / tao model only).
  const shippedFolders = new Set<string>();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
  for (const dir of include) {
    for (const file of walk(join(PACKAGE_ROOT, dir))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/packagePath\(([^)]*)\)/g)) {
        const args = [...m[1]!.matchAll(/'([^']+)'/g)].map((a) => a[1]!);
        if (args.length) shippedFolders.add(args.join('/'));
      }
    }
  }
  const notShipped = [...shippedFolders].filter(
    (path) => !path.startsWith('infra/') && !copied.some((c) => path === c.replace(/\/$/, '') || path.startsWith(c) || c.startsWith(`${path}/`)),
  );
  assert.deepEqual(notShipped, [], 'data read through packagePath() that the image lacks');
  assert.ok(!copied.some((c) => c.startsWith('infra')), 'infra/ is not shipped (tao infra and tao model need java, mvn and go)');
  // The ONNX models: model and labels, not the training data.
  for (const model of ['intent-router', 'error-classifier']) {
    for (const file of ['model.onnx', 'labels.json']) assert.ok(copied.includes(`models/${model}/${file}`), `${model}/${file}`);
    assert.ok(!copied.includes(`models/${model}/eval.jsonl`));
  }
  const text = runtime.join('\n');
  assert.match(text, /^USER 10001:10001$/m, 'a non-root user');
  assert.match(text, /NODE_OPTIONS=--max-semi-space-size=8/, "the stages' node flag (runtime/stage-node-flags.json)");
  assert.deepEqual(JSON.parse(readFileSync(join(PACKAGE_ROOT, 'runtime', 'stage-node-flags.json'), 'utf8')), ['--max-semi-space-size=8']);
  assert.doesNotMatch(text, /npm (ci|install)|typescript|tsx/, 'no dev tooling in the runtime stage');
  assert.match(containerStage('deps').join('\n'), /npm ci --omit=dev/);
});

test('deploy/compose.yaml runs known processes with environments the configuration accepts', () => {
  const compose = parse(readFileSync(join(PACKAGE_ROOT, 'deploy', 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, { command?: string[]; environment?: Record<string, string>; profiles?: string[] }>;
  };
  const tao = Object.entries(compose.services).filter(([, s]) => !s.profiles);
  assert.deepEqual(tao.map(([name]) => name).sort(), ['action', 'ingress', 'observation', 'scheduler', 'thought', 'tools', 'topics']);
  for (const [name, service] of tao) {
    assert.deepEqual(service.command, name === 'topics' ? ['topics', 'apply'] : ['run', name], name);
    // ${VAR:-default} as compose resolves it with nothing set.
    const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, String(v).replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')]));
    assert.deepEqual(environmentProblems(env), [], name);
    assert.doesNotThrow(() => loadRuntimeConfig(env), name);
  }
});

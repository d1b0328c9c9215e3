// test-needs: kafka
/**
 * `tao run` on a namespace whose topics were never applied (fresh infrastructure, a new
 * TAO_NAMESPACE) stops with one line saying what to run, not a kafkajs stack trace; with
 * --apply-topics it applies the catalog and starts. Real broker and registry.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import { spawnStage, stopAll, type StageProcess } from '../../cli/processes.ts';
import { loadRuntimeConfig } from '../../runtime/config.ts';
import { createKafka } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { applyTopics } from '../../topics/apply.ts';
import { topicNames } from '../../topics/catalog.ts';

const processes: StageProcess[] = [];

after(async () => {
  await stopAll(processes);
});

function freshEnv(): { namespace: string; env: NodeJS.ProcessEnv } {
  const namespace = `t${randomUUID().slice(0, 8)}`;
  return {
    namespace,
    env: {
      ...process.env,
      TAO_NAMESPACE: namespace,
      TAO_SESSION_TIMEOUT_MS: '6000',
      TAO_OPS_PORT: '0',
      TAO_TOOLS_PORT: '0',
      TAO_INGRESS_PORT: '0',
      TAO_SEMANTIC_CHECK: 'off',
    },
  };
}

function start(name: string, env: NodeJS.ProcessEnv, args: string[] = []): { proc: StageProcess; stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const proc = spawnStage(name, env, () => undefined, args);
  proc.child.stdout!.on('data', (b: Buffer) => stdout.push(...b.toString().split('\n').filter(Boolean)));
  proc.child.stderr!.on('data', (b: Buffer) => stderr.push(...b.toString().split('\n').filter(Boolean)));
  processes.push(proc);
  return { proc, stdout, stderr };
}

const INSTRUCTION = /; run `npx tao topics apply` first, or start with --apply-topics$/;

test(
  'a stage and `run all` on a namespace without topics exit 1 with one line naming the topic, the namespace and the command to run',
  { timeout: 120000 },
  async () => {
    const { namespace, env } = freshEnv();
    const stage = start('observation', env);
    const all = start('all', env);
    assert.equal(await stage.proc.exited, 1);
    assert.equal(await all.proc.exited, 1);
    for (const [who, run] of [
      ['observation', stage],
      ['all', all],
    ] as const) {
      assert.equal(run.stderr.length, 1, `${who}: ${run.stderr.join('\n')}`);
      assert.match(
        run.stderr[0]!,
        new RegExp(`^tao: topic "${namespace}\\.[a-z.]+"( \\(and \\d+ more\\))? does not exist \\(namespace "${namespace}"\\)`),
        who,
      );
      assert.match(run.stderr[0]!, INSTRUCTION, who);
      assert.ok(!run.stdout.some((l) => /does not host this topic-partition|"level":"(warn|error)"/.test(l)), `${who}: ${run.stdout.join('\n')}`);
    }
    // `run all` checked before it started any process.
    assert.ok(!all.stdout.some((l) => /^(tools|thought|action|observation|ingress) +\|/.test(l)), all.stdout.join('\n'));
  },
);

test('topics without registered schemas: the stage names the missing subject', { timeout: 120000 }, async () => {
  const { namespace, env } = freshEnv();
  const config = loadRuntimeConfig(env);
  const admin = createKafka(config, 'test-check', createLogger({}, { level: 'error' })).admin();
  await admin.connect();
  try {
    await applyTopics(admin, topicNames(namespace));
  } finally {
    await admin.disconnect();
  }
  const stage = start('observation', env);
  assert.equal(await stage.proc.exited, 1);
  assert.equal(stage.stderr.length, 1, stage.stderr.join('\n'));
  // Observation's input, its output and the releases it follows (tao.manifests).
  assert.match(stage.stderr[0]!, new RegExp(`^tao: schema subject "${namespace}\\.action\\.results-value"( \\(and [12] more\\))? is not registered at `));
  assert.match(stage.stderr[0]!, INSTRUCTION);
});

test('--apply-topics applies the catalog, then the stage starts', { timeout: 120000 }, async () => {
  const { namespace, env } = freshEnv();
  const stage = start('observation', env, ['--apply-topics']);
  const deadline = Date.now() + 90000;
  while (!stage.stdout.some((l) => l.includes('"msg":"stage started"'))) {
    if (stage.proc.child.exitCode !== null) assert.fail(`exited (${stage.proc.child.exitCode}):\n${[...stage.stdout, ...stage.stderr].join('\n')}`);
    if (Date.now() > deadline) assert.fail(`not started within 90 s:\n${stage.stdout.slice(-10).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(
    stage.stdout.some((l) => l.includes('"msg":"topics apply"') && l.includes(`created   ${namespace}.tao.tasks`)),
    stage.stdout.slice(0, 20).join('\n'),
  );
  const admin = createKafka(loadRuntimeConfig(env), 'test-check', createLogger({}, { level: 'error' })).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    assert.deepEqual(
      topicNames(namespace)
        .all()
        .map((t) => t.name)
        .filter((t) => !existing.has(t)),
      [],
    );
  } finally {
    await admin.disconnect();
  }
});

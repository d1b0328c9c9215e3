// test-needs: kafka
/**
 * TLS and SASL for real: a private broker whose only client listener is SASL_SSL (SCRAM-SHA-512,
 * a CA made at start-up) and a second schema registry behind HTTP basic auth (infra/secure.ts).
 * The whole loop runs through them with nothing but the documented settings (KAFKA_SSL,
 * KAFKA_SSL_CA_FILE, KAFKA_SASL_*, SCHEMA_REGISTRY_*); a wrong password, a missing CA and a
 * plaintext client each fail start-up in one line; and no credential shows in any log line or
 * record. The shared broker and registry are not used.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { KafkaMessage } from 'kafkajs';
import { spawnStage, stopAll, type StageProcess } from '../../cli/processes.ts';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { startSecureBroker, type SecureBroker } from '../../infra/secure.ts';
import { followFromBeginning } from '../../runtime/follow.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import { followOutcomes, startLoop, type RunningLoop } from '../helpers/cluster.ts';

const saslPassword = randomBytes(18).toString('hex');
const registryPassword = randomBytes(18).toString('hex');
const wrongPassword = randomBytes(18).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'tao-secure-'));
let secure: SecureBroker;
let loop: RunningLoop;
/** Stages started only to see them fail: their lines join the secret scan. */
const failedStarts: Array<{ proc: StageProcess; lines: string[] }> = [];

before(async () => {
  secure = await startSecureBroker({
    dir,
    env: process.env,
    user: 'tao-test',
    password: saslPassword,
    registry: { username: 'tao-registry', password: registryPassword },
  });
  // Only the documented settings: the shared broker's address from the test environment is replaced.
  loop = await startLoop(secure.env);
});

after(async () => {
  await stopAll(failedStarts.map((s) => s.proc));
  await loop?.stop();
  await secure?.stop();
  // The broker's data goes; its certificates, config and logs stay for a post-mortem.
  await rm(join(dir, 'data'), { recursive: true, force: true });
});

/** Starts an Observation process against the secure broker with `env` on top; resolves with its exit code, its lines and how long it ran. */
async function startFailing(env: NodeJS.ProcessEnv): Promise<{ code: number | string; lines: string[]; ms: number }> {
  const lines: string[] = [];
  const merged: NodeJS.ProcessEnv = { ...loop.cluster.env, TAO_OPS_PORT: '0', ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  const started = Date.now();
  const proc = spawnStage('observation', merged, (_, line) => lines.push(line));
  failedStarts.push({ proc, lines });
  const code = await proc.exited;
  return { code, lines, ms: Date.now() - started };
}

test('the whole loop runs over SASL_SSL with SCRAM-SHA-512 and a registry behind basic auth', { timeout: 240000 }, async () => {
  const { cluster } = loop;
  const follower = await followOutcomes(cluster);
  const tasks = Array.from({ length: 5 }, (_, i) =>
    buildTask({ text: `Where is my order? secure${i}@example.com`, source: 'test', external_id: `${cluster.namespace}-${i}` }),
  );
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, tasks);
  await producer.disconnect();
  await follower.waitFor(tasks.length, 120000);
  await follower.stop();
  const outcomes = [...follower.outcomes.values()].map((r) => r.value as unknown as Outcome);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    tasks.map(() => 'completed'),
    'every run completes',
  );
  assert.deepEqual(new Set(outcomes.map((o) => o.thought_id)), new Set(tasks.map((t) => t.thought_id)));

  // The registry the loop used is the one behind basic auth: it refuses a request without credentials, and holds this namespace's subjects.
  const anonymous = await fetch(`${secure.registryUrl}/subjects`);
  assert.equal(anonymous.status, 401);
  const authorization = `Basic ${Buffer.from(`tao-registry:${registryPassword}`).toString('base64')}`;
  const subjects = (await (await fetch(`${secure.registryUrl}/subjects`, { headers: { authorization } })).json()) as string[];
  assert.ok(subjects.includes(`${cluster.namespace}.tao.tasks-value`), subjects.join(', '));
});

test('a wrong SASL password stops start-up at once with one line naming the user, not the password', { timeout: 60000 }, async () => {
  const run = await startFailing({ KAFKA_SASL_PASSWORD: wrongPassword, TAO_STARTUP_WAIT_MS: '2m' });
  assert.equal(run.code, 1);
  assert.ok(run.ms < 30000, `exited after ${run.ms} ms, not after the 2 min start-up wait`);
  assert.ok(!run.lines.some((l) => l.includes('"msg":"waiting for kafka"')), 'an authentication failure is not reported as an unreachable broker');
  const errors = run.lines.filter((l) => l.startsWith('tao: '));
  assert.equal(errors.length, 1, run.lines.join('\n'));
  assert.match(
    errors[0]!,
    /^tao: Kafka refused the SASL login of KAFKA_SASL_USERNAME=tao-test \(KAFKA_SASL_MECHANISM=scram-sha-512\): .*authentication failed.*; check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD$/i,
  );
  assert.ok(!run.lines.some((l) => l.includes(wrongPassword)), 'the password given is not repeated');
});

test('a TLS client without the CA stops start-up at once, naming KAFKA_SSL_CA_FILE', { timeout: 60000 }, async () => {
  const run = await startFailing({ KAFKA_SSL_CA_FILE: undefined, TAO_STARTUP_WAIT_MS: '2m' });
  assert.equal(run.code, 1);
  assert.ok(run.ms < 30000, `exited after ${run.ms} ms, not after the 2 min start-up wait`);
  const errors = run.lines.filter((l) => l.startsWith('tao: '));
  assert.equal(errors.length, 1, run.lines.join('\n'));
  assert.match(errors[0]!, /^tao: Kafka's TLS certificate does not verify \(SELF_SIGNED_CERT_IN_CHAIN: .*\): set KAFKA_SSL_CA_FILE to the PEM file of the CA/);
});

test('a plaintext client against the SASL_SSL listener fails its start-up wait saying KAFKA_SSL may be missing', { timeout: 60000 }, async () => {
  const run = await startFailing({ KAFKA_SSL: 'false', KAFKA_SSL_CA_FILE: undefined, TAO_STARTUP_WAIT_MS: '3s' });
  assert.equal(run.code, 1);
  const waiting = run.lines.find((l) => l.includes('"msg":"waiting for kafka"'));
  assert.ok(waiting?.includes('if its listener is SSL or SASL_SSL, set KAFKA_SSL=true'), run.lines.join('\n'));
  const errors = run.lines.filter((l) => l.startsWith('tao: '));
  assert.equal(errors.length, 1, run.lines.join('\n'));
  assert.match(
    errors[0]!,
    /^tao: Kafka unreachable for \d+ s \(TAO_STARTUP_WAIT_MS=3000\): Closed connection \(the broker closed the connection: if its listener is SSL or SASL_SSL, set KAFKA_SSL=true\)/,
  );
});

test('no credential appears in any log line of the stages or the infra, nor in any committed record of the run', { timeout: 120000 }, async () => {
  // The forms a credential could leak in: as given, and inside a basic-auth header.
  const secrets = [saslPassword, registryPassword, wrongPassword, Buffer.from(`tao-registry:${registryPassword}`).toString('base64')];
  const lines = [
    ...loop.fleet.lines,
    ...failedStarts.flatMap((s) => s.lines),
    ...readFileSync(secure.logs.kafka, 'utf8').split('\n'),
    ...readFileSync(secure.logs.registry!, 'utf8').split('\n'),
  ];
  assert.ok(loop.fleet.lines.length > 0 && failedStarts.length === 3, 'the lines of the loop and of the failed starts were captured');
  for (const secret of secrets) {
    const leaked = lines.filter((l) => l.includes(secret));
    assert.deepEqual(leaked, [], 'a credential in a log line');
  }

  const { cluster } = loop;
  const topics = cluster.codec.topics.all().map((t) => t.name);
  const needles = secrets.map((s) => Buffer.from(s));
  let records = 0;
  const leaks: string[] = [];
  const reader = await followFromBeginning(cluster.kafka, topics, {
    groupPrefix: `${cluster.namespace}.secret-scan`,
    onMessage: (topic: string, partition: number, m: KafkaMessage) => {
      records++;
      const parts = [m.key, m.value, ...Object.entries(m.headers ?? {}).flatMap(([k, v]) => [Buffer.from(k), ...(Array.isArray(v) ? v : [v])])];
      for (const part of parts) {
        const bytes = typeof part === 'string' ? Buffer.from(part) : part;
        if (bytes && needles.some((n) => bytes.includes(n))) leaks.push(`${topic}/${partition}@${m.offset}`);
      }
    },
  });
  await reader.reachedEnd;
  await reader.stop();
  assert.ok(records >= 5 * 5, `read ${records} records: every topic of the run, tasks to outcomes`);
  assert.deepEqual(leaks, [], 'a credential in a record');
});

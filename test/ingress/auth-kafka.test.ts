// test-needs: kafka
/**
 * `tao run ingress` with a keys file made by `tao ingress key`, against the real broker: only the
 * request with a valid, scoped key reaches `tao.tasks`, and the process's output holds no key and
 * no hash. (The answers in detail, the rate limit and the metrics: test/ingress/auth.test.ts.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { ApiKeyEntry } from '../../ingress/api-keys.ts';
import { TAO_BIN, spawnStage, stopAll, type StageProcess } from '../../cli/processes.ts';
import type { Task } from '../../schemas/types.gen.ts';
import { freshCluster, scan, type TestCluster } from '../helpers/cluster.ts';

const exec = promisify(execFile);

let cluster: TestCluster;
let ingress: StageProcess;
let url = '';
const lines: string[] = [];
const made: Array<{ key: string; entry: ApiKeyEntry }> = [];

before(async () => {
  cluster = await freshCluster();
  for (const args of [
    ['--id', 'cli-bot', '--sources', 'cli'],
    ['--id', 'old', '--sources', '*'],
  ]) {
    const { stdout } = await exec(process.execPath, [TAO_BIN, 'ingress', 'key', ...args, '--json'], { env: cluster.env });
    made.push(JSON.parse(stdout) as { key: string; entry: ApiKeyEntry });
  }
  const file = join(mkdtempSync(join(tmpdir(), 'tao-keys-')), 'keys.json');
  writeFileSync(file, JSON.stringify({ keys: [made[0]!.entry, { ...made[1]!.entry, revoked: true }] }, null, 2));

  let listening!: () => void;
  const ready = new Promise<void>((r) => (listening = r));
  ingress = spawnStage('ingress', { ...cluster.env, TAO_INGRESS_KEYS_FILE: file, TAO_INGRESS_PORT: '0', TAO_BIND_HOST: '127.0.0.1' }, (_who, line) => {
    lines.push(line);
    if (line.includes('"msg":"ingress listening"')) {
      url = (JSON.parse(line) as { url: string }).url;
      listening();
    }
  });
  const exited = ingress.exited.then((code) => {
    throw new Error(`the ingress exited (${code}):\n${lines.join('\n')}`);
  });
  await Promise.race([ready, exited]);
  exited.catch(() => undefined);
});
after(async () => {
  if (ingress) await stopAll([ingress]);
});

const submit = (task: Record<string, unknown>, key?: string) =>
  fetch(`${url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(task),
  });

test(
  'only a valid key scoped to the source gets its task into tao.tasks (202); no key, a revoked key and another source write nothing',
  { timeout: 120000 },
  async () => {
    const [valid, revoked] = made.map((m) => m.key);
    const refused = [
      await submit({ text: 'no key', source: 'cli' }),
      await submit({ text: 'revoked', source: 'cli' }, revoked),
      await submit({ text: 'other source', source: 'jira' }, valid),
    ];
    assert.deepEqual(
      refused.map((r) => r.status),
      [401, 401, 403],
    );

    const accepted = await submit({ text: 'where is my order O-12345678? ada@example.com', source: 'cli', external_id: 'A-1' }, valid);
    assert.equal(accepted.status, 202);
    const { thought_id, task_id } = (await accepted.json()) as { thought_id: string; task_id: string };
    const tasks = await scan(cluster, ['tasks'], { until: (rs) => rs.some((r) => r.key === thought_id) });
    // The topic's end offsets count every record ever written to it (plain idempotent writes: no transaction markers).
    const admin = cluster.kafka.admin();
    await admin.connect();
    try {
      const ends = await admin.fetchTopicOffsets(cluster.codec.topics.name('tasks'));
      assert.equal(
        ends.reduce((n, p) => n + Number(p.high), 0),
        1,
        'the refused requests wrote nothing',
      );
    } finally {
      await admin.disconnect();
    }
    const task = tasks.find((r) => r.key === thought_id)!.value as unknown as Task;
    assert.deepEqual(
      { task_id: task.task_id, source: task.source, metadata: { ...task.metadata } },
      { task_id, source: 'cli', metadata: { api_key_id: 'cli-bot' } },
    );
  },
);

test('the process says it guards the route, logs refusals by key id, and prints no key and no hash', () => {
  const events = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.ok(
    events.some((e) => e.msg === 'POST /v1/tasks needs an API key' && e.keys === 1 && e.revoked === 1),
    lines.join('\n'),
  );
  assert.ok(events.some((e) => e.msg === 'task refused: unauthorized' && e.reason === 'revoked' && e.key_id === 'old'));
  assert.ok(events.some((e) => e.msg === 'task accepted' && e.key_id === 'cli-bot'));
  const text = lines.join('\n');
  for (const { key, entry } of made) {
    for (const secret of [key.slice(4), entry.sha256]) {
      for (let i = 0; i + 12 <= secret.length; i += 4) assert.ok(!text.includes(secret.slice(i, i + 12)), 'a piece of a key or a hash is in the output');
    }
  }
});

// test-needs: kafka, python
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { TopicId } from '../../topics/catalog.ts';

import { followOutcomes, scan, startLoop, type RunningLoop, type TestCluster } from '../helpers/cluster.ts';

const run = promisify(execFile);
/** The venv `npm test` prepares from test/interop/requirements.txt (scripts/run-tests.js). */
const PYTHON = process.env.TAO_TEST_INTEROP_PYTHON ?? new URL('../../.infra/interop-venv/bin/python', import.meta.url).pathname;
const READER = new URL('./confluent_avro_reader.py', import.meta.url).pathname;

let loop: RunningLoop;
let cluster: TestCluster;

before(async () => {
  loop = await startLoop();
  ({ cluster } = loop);
});
after(async () => {
  await loop?.stop();
});

test("Confluent's own Python client and Avro deserializer read every loop topic through the registry", { timeout: 120000 }, async () => {
  assert.ok(existsSync(PYTHON), `no interop Python at ${PYTHON}: run \`npm test\` (it creates the venv) or set TAO_TEST_INTEROP_PYTHON`);
  const follower = await followOutcomes(cluster);
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(
    producer,
    cluster.codec,
    [0, 1, 2].map((i) => buildTask({ text: `order of interop${i}@example.com`, source: 'interop', external_id: `${cluster.namespace}-${i}` })),
  );
  await producer.disconnect();
  await follower.waitFor(3, 60000);
  await follower.stop();

  const topics: TopicId[] = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'];
  const ours = await scan(cluster, topics, {
    until: (rs) => rs.filter((r) => r.topic === 'observationResults').length >= 9 && rs.filter((r) => r.topic === 'outcomes').length >= 3,
  });
  for (const id of topics) {
    const expected = ours.filter((r) => r.topic === id);
    const { stdout } = await run(PYTHON, [
      READER,
      '--brokers',
      cluster.config.kafka.brokers.join(','),
      '--registry',
      cluster.config.registry.url,
      '--topic',
      cluster.codec.topics.name(id),
      '--expect',
      String(expected.length),
      '--timeout-s',
      '30',
    ]);
    const theirs = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { partition: number; offset: number; key: string; value: Record<string, unknown>; schema_id: number });
    assert.equal(theirs.length, expected.length, `${id}: same record count`);
    for (const record of theirs) {
      const mine = expected.find((r) => r.partition === record.partition && Number(r.offset) === record.offset);
      assert.ok(mine, `${id}: python read ${record.partition}@${record.offset}, which we did not`);
      assert.equal(record.key, mine.key);
      assert.deepEqual(record.value, JSON.parse(JSON.stringify(mine.value)), `${id}: python decodes the same value`);
    }
  }
});

// test-needs: kafka
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { buildTask, submitTasks, thoughtIdFor } from '../../client/tasks.ts';
import type { Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';

import { StageFleet, followOutcomes, scan, scanToEnd, startLoop, type RunningLoop, type TestCluster } from '../helpers/cluster.ts';

let loop: RunningLoop;
let cluster: TestCluster;
let fleet: StageFleet;

before(async () => {
  loop = await startLoop();
  ({ cluster, fleet } = loop);
});
after(async () => {
  await loop?.stop();
});

async function submit(...tasks: ReturnType<typeof buildTask>[]) {
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, tasks);
  await producer.disconnect();
}

test(
  'a task without the customer e-mail ends awaiting_input; `tao submit --reply` with it resumes the same run to completed',
  { timeout: 120000 },
  async () => {
    const follower = await followOutcomes(cluster);
    const task = buildTask({ text: 'Where is my order? It never arrived.', source: 'helpdesk', external_id: 'T-77' });
    await submit(task);
    await follower.waitFor(1, 30000);
    const parked = follower.outcomes.get(task.thought_id)!.value as unknown as Outcome;
    assert.equal(parked.status, 'awaiting_input');
    assert.deepEqual([...parked.missing_fields], ['email']);
    await follower.stop();

    const { stdout } = await promisify(execFile)(
      process.execPath,
      [TAO_BIN, 'submit', '--reply', task.thought_id, '--text', 'Sorry, it is bob.builder@example.com', '--wait', '--timeout-s', '60'],
      { env: cluster.env },
    );
    const resumed = JSON.parse(stdout) as Outcome;
    assert.equal(resumed.thought_id, task.thought_id, 'the reply resumed the same run');
    assert.equal(resumed.status, 'completed', resumed.reason);
    assert.equal(JSON.parse(resumed.output_json!).customer_id.startsWith('C-'), true);

    const outcomes = await scan(cluster, ['outcomes'], { until: (rs) => rs.filter((r) => r.key === task.thought_id).length >= 2 });
    assert.deepEqual(
      outcomes.filter((r) => r.key === task.thought_id).map((r) => (r.value as unknown as Outcome).status),
      ['awaiting_input', 'completed'],
    );
    const requests = await scan(cluster, ['thoughtRequests'], { until: (rs) => rs.filter((r) => r.key === task.thought_id).length >= 3 });
    const emails = requests
      .filter((r) => r.key === task.thought_id)
      .flatMap((r) => (r.value as unknown as ThoughtRequest).steps.filter((s) => s.step_id === 'S1').map((s) => JSON.parse(s.input_json).email));
    assert.deepEqual(emails, ['bob.builder@example.com'], 'the reply filled the missing input');
  },
);

test('the same task delivered 3 times starts one run', { timeout: 120000 }, async () => {
  const follower = await followOutcomes(cluster);
  const copies = [0, 1, 2].map(() => buildTask({ text: 'Order status please: dup@example.com', source: 'zendesk', external_id: 'Z-1001' }));
  const thoughtId = thoughtIdFor('zendesk', 'Z-1001');
  assert.ok(copies.every((t) => t.thought_id === thoughtId));
  await submit(copies[0]!);
  await submit(copies[1]!, copies[2]!);
  await follower.waitFor(1, 60000);
  await follower.stop();
  const records = await scanToEnd(cluster, ['thoughtRequests', 'outcomes']);
  const mine = records.filter((r) => r.key === thoughtId);
  assert.equal(mine.filter((r) => r.topic === 'outcomes').length, 1, 'one outcome');
  assert.equal(mine.filter((r) => r.topic === 'thoughtRequests' && (r.value as unknown as ThoughtRequest).iteration === 1).length, 1, 'one first wave');
  // A chunk retried after an aborted transaction decides (and logs) again: count records, not lines.
  const ignored = fleet.lines.filter((l) => l.includes('"msg":"input ignored"') && l.includes(thoughtId));
  const ignoredOffsets = new Set(ignored.map((l) => (JSON.parse(l.slice(l.indexOf('{'))) as { offset: string }).offset));
  assert.equal(ignoredOffsets.size, 2, `the two redeliveries are logged as ignored:\n${ignored.join('\n')}`);
});

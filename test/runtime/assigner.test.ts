/**
 * The co-partitioned assigner, driven as kafkajs's group leader drives it: partition p of every
 * input goes to the same member (so a run's records and its state store entry meet in one
 * instance), spread evenly, and the same group always gets the same assignment.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import kafkajs, { type Cluster, type PartitionMetadata } from 'kafkajs';
import { coPartitionedAssigner } from '../../runtime/assigner.ts';

const { AssignerProtocol } = kafkajs;

/** A cluster that knows only each topic's partition count. */
function cluster(partitions: Record<string, number>): Cluster {
  const findTopicPartitionMetadata = (topic: string): PartitionMetadata[] =>
    Array.from({ length: partitions[topic] ?? 0 }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
      offlineReplicas: [],
    }));
  return { findTopicPartitionMetadata } as unknown as Cluster;
}

/** Runs one assignment and decodes it: member id -> topic -> partitions. */
async function assign(members: string[], partitions: Record<string, number>): Promise<Map<string, Record<string, number[]>>> {
  const topics = Object.keys(partitions);
  const assigner = coPartitionedAssigner({ cluster: cluster(partitions), groupId: 'g', logger: undefined as never });
  const memberMetadata = AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) });
  const result = await assigner.assign({ members: members.map((memberId) => ({ memberId, memberMetadata })), topics });
  return new Map(result.map(({ memberId, memberAssignment }) => [memberId, AssignerProtocol.MemberAssignment.decode(memberAssignment)!.assignment]));
}

const INPUTS = { 'ns.thought.requests': 6, 'ns.observation.results': 6 };

describe('coPartitionedAssigner', () => {
  test('gives partition p of every input topic to the same member, and every partition to exactly one member', async () => {
    const assignment = await assign(['m-a', 'm-b', 'm-c', 'm-d'], INPUTS);
    for (const [member, topics] of assignment) {
      assert.deepEqual(topics['ns.thought.requests'] ?? [], topics['ns.observation.results'] ?? [], `${member} holds the same partitions of both inputs`);
    }
    for (const topic of Object.keys(INPUTS)) {
      const all = [...assignment.values()].flatMap((t) => t[topic] ?? []).sort((a, b) => a - b);
      assert.deepEqual(all, [0, 1, 2, 3, 4, 5], `every partition of ${topic} is assigned once`);
    }
  });

  test('is balanced: members hold partition counts that differ by at most one', async () => {
    for (const count of [1, 2, 3, 4, 5, 6]) {
      const members = Array.from({ length: count }, (_, i) => `member-${i}`);
      const held = [...(await assign(members, INPUTS)).values()].map((t) => (t['ns.thought.requests'] ?? []).length);
      assert.equal(held.length, count, 'every member gets an answer, partitions or not');
      assert.ok(Math.max(...held) - Math.min(...held) <= 1, `${count} members hold ${held.join(', ')}`);
    }
  });

  test('is stable: the same members get the same partitions whatever order the group lists them in', async () => {
    const one = await assign(['m-c', 'm-a', 'm-b'], INPUTS);
    const two = await assign(['m-b', 'm-c', 'm-a'], INPUTS);
    assert.deepEqual(Object.fromEntries([...one].sort()), Object.fromEntries([...two].sort()));
    assert.deepEqual(
      one.get('m-a'),
      { 'ns.thought.requests': [0, 3], 'ns.observation.results': [0, 3] },
      'partition p goes to the p-th member by id, modulo the member count',
    );
  });

  test('a member beyond the partition count gets an empty assignment, not an error', async () => {
    const assignment = await assign(['m-a', 'm-b', 'm-c'], { 'ns.tasks': 2 });
    assert.deepEqual(assignment.get('m-c'), {});
  });

  test('announces its protocol with the subscribed topics', () => {
    const assigner = coPartitionedAssigner({ cluster: cluster(INPUTS), groupId: 'g', logger: undefined as never });
    const { name, metadata } = assigner.protocol({ topics: Object.keys(INPUTS) });
    assert.equal(name, 'TaoCoPartitioned');
    assert.deepEqual(AssignerProtocol.MemberMetadata.decode(metadata)!.topics, Object.keys(INPUTS));
  });
});

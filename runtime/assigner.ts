import kafkajs, { type PartitionAssigner } from 'kafkajs';

const { AssignerProtocol } = kafkajs;

/**
 * Assigns partition p of every subscribed topic to the same member, so a stage that reads several
 * co-partitioned topics (same key, same partition count) sees every record of a key in one instance,
 * and a keyed state store needs no cross-instance coordination. Partition p goes to the p-th member
 * (sorted by id) modulo the member count.
 */
export const coPartitionedAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'TaoCoPartitioned',
  version: 0,
  async assign({ members, topics }) {
    const sorted = members.map((m) => m.memberId).sort();
    const assignment: Record<string, Record<string, number[]>> = {};
    for (const topic of topics) {
      for (const { partitionId } of cluster.findTopicPartitionMetadata(topic)) {
        const member = sorted[partitionId % sorted.length]!;
        ((assignment[member] ??= {})[topic] ??= []).push(partitionId);
      }
    }
    return sorted.map((memberId) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: assignment[memberId] ?? {}, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return { name: 'TaoCoPartitioned', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) };
  },
});

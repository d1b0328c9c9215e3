/**
 * Where a producer puts a keyed record. The loop's producers use kafkajs' default partitioner
 * (murmur2 of the key, made positive, modulo the topic's partition count: the Java client's rule),
 * so replay asks that very function instead of re-implementing the hash.
 */
import kafkajs, { type PartitionMetadata } from 'kafkajs';

const { Partitioners } = kafkajs;

/**
 * The partition the default partitioner chooses for `key` on a topic with `partitions` partitions.
 * With a key the choice depends only on the key and the partition count (never on which leaders
 * are up), so a synthetic metadata list of that length gives the producer's answer.
 */
export function partitionForKey(key: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partition count must be a positive integer, got ${partitions}`);
  const metadata: PartitionMetadata[] = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionErrorCode: 0,
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
  }));
  // A fresh partitioner per call: its only state is the round-robin counter for key-less records.
  return Partitioners.DefaultPartitioner()({ topic: 'any', partitionMetadata: metadata, message: { key, value: null } });
}

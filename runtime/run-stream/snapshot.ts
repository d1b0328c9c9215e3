/**
 * `readRunSnapshot(deps, thoughtId)`: Thought's latest snapshot of one run (thought.runs, the
 * compacted changelog of its state store) as the log holds it now: the run's partition read
 * read_committed from its first retained offset to its current end, the last record of the run's key
 * kept. Null when the log has none, or the run was swept (a tombstone). What the ingress checks an
 * approver's edit against (ingress/approvals.ts): the parked run's recorded steps, as Thought has them.
 */
import type { Kafka } from 'kafkajs';
import type { RunSnapshot } from '../../schemas/types.gen.ts';
import type { AvroCodec } from '../codec.ts';
import { LogReader } from '../log-reader.ts';
import { partitionForKey } from '../partition.ts';

export async function readRunSnapshot(deps: { kafka: Kafka; codec: AvroCodec }, thoughtId: string, timeoutMs = 30000): Promise<RunSnapshot | null> {
  const { codec } = deps;
  const topic = codec.topics.name('thoughtRuns');
  const reader = await LogReader.connect(deps.kafka, codec.topics.group('snapshot'));
  try {
    const offsets = await reader.offsets(topic);
    const p = offsets.find((o) => o.partition === partitionForKey(thoughtId, offsets.length))!;
    const records = await reader.read([{ topic, partition: p.partition, from: p.low, to: p.high }], { filter: (r) => r.key === thoughtId, timeoutMs });
    const last = records.at(-1);
    return last?.value ? await codec.decode<RunSnapshot>('thoughtRuns', last.value) : null;
  } finally {
    await reader.close();
  }
}

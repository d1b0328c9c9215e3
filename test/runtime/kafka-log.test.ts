/**
 * kafkajs logs at ERROR what it retries by itself; the runtime's logCreator sends that churn to
 * debug and keeps the rest visible. No broker: the entries are the ones kafkajs 2.2.4 writes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTransientKafkaLog } from '../../runtime/kafka.ts';

const entry = (message: string, error?: string) => ({ log: { timestamp: '', logger: 'kafkajs', message, ...(error === undefined ? {} : { error }) } });

test('start-up and rebalance churn is transient: coordinator not available, rebalancing, leader moving, broker not answering', () => {
  assert.ok(isTransientKafkaLog(entry('Response FindCoordinator(key: 10, version: 2)', 'The group coordinator is not available')));
  assert.ok(isTransientKafkaLog(entry('Response Heartbeat(key: 12, version: 3)', 'The group is rebalancing, so a rejoin is needed')));
  assert.ok(isTransientKafkaLog(entry('Response ListOffsets(key: 2, version: 3)', 'This server is not the leader for that topic-partition')));
  assert.ok(isTransientKafkaLog(entry('Connection error: connect ECONNREFUSED 127.0.0.1:9092')));
  assert.ok(
    isTransientKafkaLog(entry('Failed to connect to seed broker, trying another broker from the list: Connection error: connect ECONNREFUSED 127.0.0.1:9092')),
  );
});

test("a producer's send kafkajs retries is transient: a transaction's coordinator busy with the previous one, a leader moving, a closed connection", () => {
  assert.ok(
    isTransientKafkaLog(
      entry('Failed to send messages: The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing'),
    ),
  );
  assert.ok(isTransientKafkaLog(entry('Failed to send messages: This server is not the leader for that topic-partition')));
  assert.ok(isTransientKafkaLog(entry('Failed to send messages: Closed connection')));
  assert.ok(isTransientKafkaLog(entry('Failed to send messages: Connection error: connect ECONNREFUSED 127.0.0.1:26292')));
  // Not retried, so not churn: the transaction fails with it.
  assert.equal(
    isTransientKafkaLog(entry('Failed to send messages: The request included a message larger than the max message size the server will accept')),
    false,
  );
  assert.equal(
    isTransientKafkaLog(
      entry(
        "Failed to send messages: Producer attempted an operation with an old epoch. Either there is a newer producer with the same transactionalId, or the producer's transaction has been expired by the broker",
      ),
    ),
    false,
  );
});

test('a missing topic, a crash and a refused authentication stay visible', () => {
  assert.equal(isTransientKafkaLog(entry('Response Metadata(key: 3, version: 6)', 'This server does not host this topic-partition')), false);
  assert.equal(isTransientKafkaLog(entry('Crash: KafkaJSNumberOfRetriesExceeded: The group coordinator is not available')), false);
  assert.equal(isTransientKafkaLog(entry('Response SaslAuthenticate(key: 36, version: 1)', 'Request is not valid given the current SASL state')), false);
  assert.equal(
    isTransientKafkaLog(
      entry('Response Produce(key: 0, version: 7)', 'The request included a message larger than the max message size the server will accept'),
    ),
    false,
  );
});

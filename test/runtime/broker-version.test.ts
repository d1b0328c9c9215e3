/**
 * The start-up decision on the brokers' version (runtime/broker-version.ts): exactly-once needs
 * Kafka >= 3.9.1, and a broker's ApiVersions answer tells 3.9 and later from older releases. The
 * version maps are the request versions real releases serve (apache/kafka message definitions at
 * the tags 3.7.1, 3.8.1, 3.9.0; 4.0 adds ListOffsets v10).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brokerVersionDecision, missingSince39, type ApiVersionRanges, type BrokerVersions } from '../../runtime/broker-version.ts';
import { loadRuntimeConfig } from '../../runtime/config.ts';

/** ApiVersions (18), Fetch (1), ListOffsets (2) and Produce (0) as a release serves them. */
function release(apiVersions: number, fetch: number, listOffsets: number): ApiVersionRanges {
  return {
    0: { minVersion: 0, maxVersion: 11 },
    1: { minVersion: 0, maxVersion: fetch },
    2: { minVersion: 0, maxVersion: listOffsets },
    18: { minVersion: 0, maxVersion: apiVersions },
  };
}
const KAFKA_3_7 = release(3, 16, 8);
const KAFKA_3_8 = release(3, 16, 8);
const KAFKA_3_9 = release(4, 17, 9);
const KAFKA_4_0 = { ...release(4, 17, 10), 1: { minVersion: 4, maxVersion: 17 } };

const broker = (versions: ApiVersionRanges, node = 1): BrokerVersions => ({ broker: `kafka-${node}:9092 (node ${node})`, versions });

test('a 3.8 broker is refused with one line naming the broker, what it lacks, the version needed and the variable', () => {
  const decision = brokerVersionDecision([broker(KAFKA_3_8)], 'refuse');
  assert.equal(decision.action, 'refuse');
  assert.equal(
    decision.message,
    'Kafka broker older than 3.9 (kafka-1:9092 (node 1) lacks ApiVersions v4, Fetch v17, ListOffsets v9): exactly-once needs Kafka >= 3.9.1 (KAFKA-17507); upgrade the brokers, or set TAO_KAFKA_MIN_VERSION_CHECK=warn to start anyway',
  );
  assert.doesNotMatch(decision.message, /\n/);
  assert.equal(brokerVersionDecision([broker(KAFKA_3_7)], 'refuse').action, 'refuse');
});

test('3.9 and 4.0 brokers are accepted', () => {
  assert.deepEqual(brokerVersionDecision([broker(KAFKA_3_9)], 'refuse'), { action: 'start' });
  assert.deepEqual(brokerVersionDecision([broker(KAFKA_4_0, 1), broker(KAFKA_3_9, 2)], 'refuse'), { action: 'start' });
});

test('one old broker among new ones is enough to refuse, and it is the one named', () => {
  const decision = brokerVersionDecision([broker(KAFKA_3_9, 1), broker(KAFKA_3_8, 2), broker(KAFKA_3_9, 3)], 'refuse');
  assert.equal(decision.action, 'refuse');
  assert.match(decision.action === 'refuse' ? decision.message : '', /\(kafka-2:9092 \(node 2\) lacks ApiVersions v4, Fetch v17, ListOffsets v9\)/);
});

test('a broker that serves only some of the 3.9 versions (a backport, a compatible service) is not taken for 3.9', () => {
  assert.deepEqual(missingSince39(release(4, 16, 8)), ['Fetch v17', 'ListOffsets v9']);
  assert.deepEqual(missingSince39({ 18: { minVersion: 0, maxVersion: 4 } }), ['Fetch v17', 'ListOffsets v9']);
  assert.equal(brokerVersionDecision([broker(release(4, 17, 8))], 'refuse').action, 'refuse');
});

test('warn mode starts with the same line as a warning; off does not look', () => {
  const warned = brokerVersionDecision([broker(KAFKA_3_8)], 'warn');
  assert.equal(warned.action, 'warn');
  assert.match(warned.action === 'warn' ? warned.message : '', /^Kafka broker older than 3\.9 .*starting anyway \(TAO_KAFKA_MIN_VERSION_CHECK=warn\)$/);
  assert.deepEqual(brokerVersionDecision([broker(KAFKA_3_8)], 'off'), { action: 'start' });
  assert.deepEqual(brokerVersionDecision([broker(KAFKA_3_9)], 'warn'), { action: 'start' });
});

test('TAO_KAFKA_MIN_VERSION_CHECK defaults to refuse, takes warn and off, and refuses anything else naming the variable', () => {
  const base = { KAFKA_BROKERS: '127.0.0.1:9092', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081' };
  assert.equal(loadRuntimeConfig(base).kafka.minVersionCheck, 'refuse');
  assert.equal(loadRuntimeConfig({ ...base, TAO_KAFKA_MIN_VERSION_CHECK: 'warn' }).kafka.minVersionCheck, 'warn');
  assert.equal(loadRuntimeConfig({ ...base, TAO_KAFKA_MIN_VERSION_CHECK: 'off' }).kafka.minVersionCheck, 'off');
  assert.throws(() => loadRuntimeConfig({ ...base, TAO_KAFKA_MIN_VERSION_CHECK: 'maybe' }), /^ConfigError: TAO_KAFKA_MIN_VERSION_CHECK must be one of/);
});

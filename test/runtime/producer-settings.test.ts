/**
 * Every producer of the project is idempotent with acks=all: a send retried after a leader change
 * is written once, and an acknowledged record is on every in-sync replica (min.insync.replicas 2
 * on a 3-broker cluster). One helper makes producers; this file checks its settings, that kafkajs
 * then refuses weaker acks, and that no other code makes a producer by hand.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { ACKS_ALL, createProducer, producerConfig } from '../../runtime/kafka.ts';

const root = new URL('../../', import.meta.url).pathname;

test('plain and transactional producers are idempotent; transactional ones keep one request in flight', () => {
  assert.equal(ACKS_ALL, -1);
  assert.deepEqual(producerConfig(), { idempotent: true, maxInFlightRequests: 1 });
  assert.deepEqual(producerConfig({ maxInFlightRequests: 5 }), { idempotent: true, maxInFlightRequests: 5 });
  assert.deepEqual(producerConfig({ transactionalId: 'g.t.0', maxInFlightRequests: 5 }), {
    idempotent: true,
    transactionalId: 'g.t.0',
    maxInFlightRequests: 1,
    transactionTimeout: 60000,
  });
});

test('a producer from the helper refuses a send asking for less than acks=all, before anything reaches a broker', async () => {
  // Port 1 on loopback: nothing listens, so a send that got past the check would fail differently.
  const kafka = new Kafka({ clientId: 'producer-settings-test', brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING, retry: { retries: 1 } });
  const producer = createProducer(kafka);
  for (const acks of [0, 1]) {
    await assert.rejects(
      producer.send({ topic: 't', acks, messages: [{ value: 'x' }] }),
      /Not requiring ack for all messages invalidates the idempotent producer/,
      `acks=${acks} is refused`,
    );
  }
});

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || e.name === 'node_modules' || e.name === 'test') return [];
    return e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [];
  });
}

test('no code outside runtime/kafka.ts makes a kafkajs producer by hand', () => {
  const byHand = tsFiles(root)
    .map((f) => relative(root, f))
    .filter((f) => f !== 'runtime/kafka.ts' && /\.producer\(/.test(readFileSync(join(root, f), 'utf8')));
  assert.deepEqual(byHand, [], 'use createProducer(kafka, options) from runtime/kafka.ts');
});

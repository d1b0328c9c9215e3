/**
 * kafkajs 2.2.4's per-connection request queue kept a 1 ms timer loop going on every connection that
 * had ever had a response, whether anything was waiting or not (kafkajs issue #1556): an idle stage
 * spent 50-75 ms of CPU a second on it. scripts/patch-kafkajs.js (postinstall) installs
 * patches/kafkajs/requestQueue.diff, which schedules a check only for a request that has to wait.
 * This drives the installed queue directly, no broker needed: nothing stays scheduled once a
 * connection is idle, and a request that has to wait (the in-flight limit, a broker's throttle) is
 * still sent.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test, type TestContext } from 'node:test';

const require = createRequire(import.meta.url);
type Queue = {
  push(request: { entry: Record<string, unknown>; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  checkPendingRequests(): void;
  destroy(): void;
  throttleCheckTimeoutId: unknown;
};
const RequestQueue = require('kafkajs/src/network/requestQueue') as new (options: Record<string, unknown>) => Queue;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A queue of one broker connection, and requests whose sending and answers the test sees. */
function connection(t: TestContext, maxInFlightRequests: number) {
  const queue = new RequestQueue({
    maxInFlightRequests,
    requestTimeout: 30000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'b:9092',
    logger: silent,
  });
  // Without the patch a timer loop would keep this process alive: a failing run ends instead of hanging.
  t.after(() => queue.destroy());
  const sent: number[] = [];
  let onSend: (id: number) => void = () => undefined;
  const request = (correlationId: number) => {
    const answered = new Promise((resolve, reject) => {
      queue.push({
        entry: { apiKey: 1, apiName: 'Fetch', apiVersion: 11, correlationId, resolve, reject },
        expectResponse: true,
        sendRequest: () => {
          sent.push(correlationId);
          onSend(correlationId);
        },
      });
    });
    return { answered, answer: () => queue.fulfillRequest({ correlationId, payload: Buffer.alloc(0), size: 0 }) };
  };
  const nextSend = () => new Promise<number>((resolve) => (onSend = resolve));
  return { queue, sent, request, nextSend };
}

test('an answered request leaves nothing scheduled on an idle connection', async (t) => {
  const { queue, sent, request } = connection(t, 1);
  const r = request(1);
  assert.deepEqual(sent, [1], 'sent at once');
  r.answer();
  await r.answered;
  assert.equal(queue.throttleCheckTimeoutId, null, 'no timer left running once nothing is pending (kafkajs 2.2.4 left a 1 ms one)');
});

test('a request over the in-flight limit waits, and goes out when the one ahead of it is answered', async (t) => {
  const { queue, sent, request } = connection(t, 1);
  const first = request(1);
  const second = request(2);
  assert.deepEqual(sent, [1], 'the second waits for the first');
  assert.notEqual(queue.throttleCheckTimeoutId, null, 'a check of the waiting request is scheduled');
  first.answer();
  assert.deepEqual(sent, [1, 2], 'the answer sent the waiting request');
  second.answer();
  await Promise.all([first.answered, second.answered]);
  // The check scheduled for the waiting request still runs once: it finds nothing pending.
  const check = queue.checkPendingRequests.bind(queue);
  await new Promise<void>((resolve) => {
    queue.checkPendingRequests = () => {
      check();
      resolve();
    };
  });
  assert.equal(queue.throttleCheckTimeoutId, null, 'and schedules no other');
});

test('a throttled connection sends its waiting request when the throttle ends, then schedules nothing', async (t) => {
  const { queue, sent, request, nextSend } = connection(t, 5);
  queue.maybeThrottle(30);
  const started = Date.now();
  const sending = nextSend();
  const r = request(7);
  assert.deepEqual(sent, [], 'held back while throttled');
  assert.notEqual(queue.throttleCheckTimeoutId, null, 'a check is scheduled for the end of the throttle');
  assert.equal(await sending, 7);
  assert.ok(Date.now() - started >= 25, 'not before the throttle ends');
  r.answer();
  await r.answered;
  assert.equal(queue.throttleCheckTimeoutId, null);
});

// test-needs: kafka
/**
 * The documented answer of the in-flight limit is the answer the ingress gives: a real ingress with
 * `maxInFlightRuns: 1` is filled, and the status (and Retry-After) it answers the next new run must
 * be the one the setting's description (which generates the configuration table) and every sentence
 * or table row of the docs that names `TAO_INGRESS_MAX_IN_FLIGHT` state. The docs once said 503
 * while the ingress answered 429; this keeps them from drifting apart again.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { SETTINGS } from '../../runtime/config.ts';
import { createLogger } from '../../runtime/log.ts';
import { freshCluster, type TestCluster } from '../helpers/cluster.ts';

const NAME = 'TAO_INGRESS_MAX_IN_FLIGHT';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const STATUS = /\b[1-5]\d\d\b/g;

let cluster: TestCluster;
let producer: Producer;
let ingress: Ingress;

before(async () => {
  cluster = await freshCluster();
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, maxInFlightRuns: 1, webhooks: { secrets: {} } },
    { producer, codec: cluster.codec, logger: createLogger({}, { level: 'error' }), kafka: cluster.kafka },
  );
});
after(async () => {
  await ingress?.close();
  await producer?.disconnect();
});

/** The markdown files a reader looks at for settings: README.md and everything under docs/. */
function docFiles(): string[] {
  const files = ['README.md'];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) files.push(rel);
    }
  };
  walk('docs');
  return files;
}

/** Each table row, and each sentence of the other text, of a markdown file. */
function fragments(markdown: string): string[] {
  const out: string[] = [];
  let paragraph: string[] = [];
  const flush = () => {
    out.push(...paragraph.join(' ').split(/(?<=\.)\s+/));
    paragraph = [];
  };
  for (const line of markdown.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('|')) {
      flush();
      out.push(trimmed);
    } else if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith('- ') || /^\d+\.\s/.test(trimmed)) {
      flush();
      paragraph.push(trimmed);
    } else paragraph.push(trimmed);
  }
  flush();
  return out;
}

const statusesIn = (text: string) => [...new Set(text.match(STATUS) ?? [])];

test(`the status the ingress answers over ${NAME} is the one its setting and the docs name`, { timeout: 60000 }, async () => {
  const submit = (externalId: string) =>
    fetch(`${ingress.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: `task ${externalId}`, source: 'docs', external_id: externalId }),
    });
  assert.equal((await submit('first')).status, 202);
  const refused = await submit('second');
  const body = (await refused.json()) as { error: string };
  assert.equal(body.error, 'too_many_runs', `the second run was not refused by the in-flight limit: ${JSON.stringify(body)}`);
  const status = String(refused.status);
  const retryAfter = refused.headers.get('retry-after');

  assert.deepEqual(statusesIn(SETTINGS[NAME].meaning), [status], `${NAME}'s description (the configuration table) names another status than ${status}`);

  const naming: { file: string; fragment: string }[] = [];
  for (const file of docFiles()) {
    for (const fragment of fragments(readFileSync(join(ROOT, file), 'utf8'))) if (fragment.includes(NAME)) naming.push({ file, fragment });
  }
  const wrong = naming.filter(({ fragment }) => statusesIn(fragment).some((s) => s !== status));
  assert.deepEqual(wrong, [], `docs name a status other than ${status} for ${NAME}`);
  const ingressRow = naming.find(({ file, fragment }) => file === 'docs/INGRESS.md' && fragment.startsWith('|'));
  assert.ok(ingressRow, `docs/INGRESS.md's table of answers has no row for ${NAME}`);
  assert.deepEqual(statusesIn(ingressRow.fragment), [status]);
  assert.ok(ingressRow.fragment.includes(`Retry-After: ${retryAfter}`), `docs/INGRESS.md's row does not give Retry-After: ${retryAfter}`);
  assert.ok(ingressRow.fragment.includes(body.error), `docs/INGRESS.md's row does not give the error ${body.error}`);
  assert.ok(
    naming.some(({ file, fragment }) => file === 'docs/ARCHITECTURE.md' && statusesIn(fragment).includes(status)),
    `docs/ARCHITECTURE.md does not say which status ${NAME} answers`,
  );
});

/**
 * The A2A agent card the ingress serves validates against the A2A v1.0 JSON Schema
 * (test/fixtures/a2a/, see its README.md for where it comes from), has every field the v1.0 proto
 * marks REQUIRED, and lists the shipped skills with their intents as tags. The SDK's own card
 * resolver reads it back.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import type { Kafka, Producer } from 'kafkajs';
import { a2aSkillsFrom } from '../../ingress/a2a/card.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import type { AvroCodec } from '../../runtime/codec.ts';
import { createLogger } from '../../runtime/log.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/a2a/${name}`, import.meta.url), 'utf8');
const bundle = JSON.parse(fixture('a2a-v1.0.0.schema.json')) as { definitions: Record<string, Record<string, unknown>> };
const proto = fixture('a2a-v1.0.0.proto');

/** The bundle's definitions, each under the `$id` its siblings' `$ref`s name (`lf.a2a.v1.AgentCard.jsonschema.json`). */
function validator() {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  for (const [title, schema] of Object.entries(bundle.definitions)) {
    const name = title.replaceAll(' ', '');
    const pkg = ['Struct', 'Timestamp', 'Value'].includes(name) ? 'google.protobuf' : 'lf.a2a.v1';
    ajv.addSchema({ ...schema, $id: `${pkg}.${name}.jsonschema.json` });
  }
  return ajv.getSchema('lf.a2a.v1.AgentCard.jsonschema.json')!;
}

/** The fields of proto message `name` marked `(google.api.field_behavior) = REQUIRED`, camelCased as in JSON. */
function requiredFields(name: string): string[] {
  const body = new RegExp(`\\nmessage ${name} \\{([\\s\\S]*?)\\n\\}`).exec(proto)?.[1] ?? '';
  return [...body.matchAll(/^\s+[\w.]+(?: [\w.]+)? (\w+) = \d+ \[\(google\.api\.field_behavior\) = REQUIRED\]/gm)].map((m) =>
    m[1]!.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
  );
}

let ingress: Ingress;
before(async () => {
  // No Kafka: the card needs none (POST /a2a then answers 503).
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 4096, auth: { mode: 'open', reason: 'test' }, a2a: { skills: a2aSkillsFrom() } },
    { producer: {} as Producer, codec: {} as AvroCodec, logger: createLogger({}, { level: 'error' }), kafka: undefined as unknown as Kafka },
  );
});
after(async () => {
  await ingress?.close();
});

test('the agent card validates against the A2A v1.0 JSON Schema and has every field the v1.0 proto requires', async () => {
  const res = await fetch(`${ingress.url}/.well-known/agent-card.json`);
  assert.equal(res.status, 200);
  const card = (await res.json()) as Record<string, any>;
  const validate = validator();
  assert.ok(validate(card), JSON.stringify(validate.errors));
  const missing = (object: Record<string, unknown>, message: string) => requiredFields(message).filter((f) => !(f in object));
  assert.deepEqual(requiredFields('AgentCard').sort(), [
    'capabilities',
    'defaultInputModes',
    'defaultOutputModes',
    'description',
    'name',
    'skills',
    'supportedInterfaces',
    'version',
  ]);
  assert.deepEqual(missing(card, 'AgentCard'), []);
  for (const skill of card.skills) assert.deepEqual(missing(skill, 'AgentSkill'), [], skill.id);
  for (const i of card.supportedInterfaces) assert.deepEqual(missing(i, 'AgentInterface'), []);

  assert.deepEqual(card.supportedInterfaces, [{ url: `${ingress.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
  assert.equal(card.capabilities.streaming, true);
  assert.deepEqual(Object.keys(card.securitySchemes), ['bearer']);
  assert.deepEqual(
    card.skills.map((s: { id: string; tags: string[] }) => [s.id, s.tags]),
    [
      ['account-access', ['account_access']],
      ['expense-claim-status', ['expense_claim_status']],
      ['invoice-copy', ['invoice_copy']],
      ['order-status', ['order_status']],
      ['outage-report', ['outage_report']],
      ['refund-request', ['refund_request']],
    ],
  );
  // The schema refuses what v1.0 does not have: a v0.3 card's top-level url.
  assert.equal(validate({ ...card, url: `${ingress.url}/a2a` }), false);

  const resolved = await new DefaultAgentCardResolver().resolve(ingress.url);
  assert.equal(resolved.supportedInterfaces[0]!.url, `${ingress.url}/a2a`);
  assert.equal(resolved.skills.length, 6);
});

test('POST /a2a on an ingress without Kafka answers 503', async () => {
  const res = await fetch(`${ingress.url}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"GetTask"}',
  });
  assert.equal(res.status, 503);
});

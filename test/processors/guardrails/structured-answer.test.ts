/**
 * Structured final answers: a skill's output schema (skills/<name>/output.schema.json) as the prompt
 * builder asks for it (a `final_answer` tool, or the final branch of a constrained turn), and as
 * Observation's gate checks the answer against the schema the request carried.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { verifyModelAnswer } from '../../../processors/observation/model-gate.ts';
import { turnSchemaOutput } from '../../../processors/model-wire.ts';
import { buildPrompt, type PromptInput } from '../../../processors/thought/model/prompt.ts';
import { ToolCatalog, DEFAULT_CATALOG_DIR, createContractAjv } from '../../../tools/catalog.ts';
import { modelToolSpecs } from '../../../tools/model-config.ts';

const ajv = createContractAjv();
const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, {}, ajv, modelToolSpecs({}, 'contracts'));
const contracts = (tool: string) => catalog.get(tool)?.validateInput;
const OUTPUT = {
  type: 'object',
  additionalProperties: false,
  required: ['order_id', 'status', 'reply'],
  properties: {
    order_id: { type: 'string', pattern: '^O-[0-9]{8}$' },
    status: { enum: ['placed', 'shipped', 'delivered'] },
    eta: { type: 'string' },
    reply: { type: 'string', minLength: 1 },
  },
};
const spec = catalog.get('orders.get')!.spec;
const input = (toolCalls: 'native' | 'json_schema', output?: Record<string, unknown>): PromptInput => ({
  system: 'rules',
  skill: { ref: 'order-status@1', prompt: 'Find the order.', tools: [{ name: spec.name, description: spec.description, parameters: spec.parameters }] },
  task: 'Where is O-12345678?',
  facts: {},
  turns: [],
  reflections: [],
  mode: 'react',
  toolCalls,
  ...(output ? { output } : {}),
});
const completion = (message: Record<string, unknown>) => ({
  model: 'sim-1',
  choices: [{ message, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
});
const finalCall = (args: unknown) => ({
  content: null,
  tool_calls: [{ id: 'a', type: 'function', function: { name: 'final_answer', arguments: JSON.stringify(args) } }],
});
const GOOD = { order_id: 'O-12345678', status: 'shipped', eta: '2026-12-05', reply: 'Order O-12345678 is shipped.' };

describe("the prompt asks for the skill's output schema", () => {
  test('native: a final_answer tool whose parameters are the schema, and the rule to use it; without a schema, neither', () => {
    const built = buildPrompt(input('native', OUTPUT), 8192);
    const tool = built.tools.find((t) => t.function.name === 'final_answer');
    assert.deepEqual(tool?.function.parameters, OUTPUT);
    assert.match(built.messages[0]!.content, /calling final_answer with arguments that match its schema/);
    const plain = buildPrompt(input('native'), 8192);
    assert.equal(
      plain.tools.some((t) => t.function.name === 'final_answer'),
      false,
    );
    assert.match(plain.messages[0]!.content, /final answer as plain text/);
  });

  test("constrained: the response_format's final branch is the schema (not text), and no final_answer tool is offered as a call", () => {
    const built = buildPrompt(input('json_schema', OUTPUT), 8192);
    const schema = (built.responseFormat as { json_schema: { schema: { anyOf: Array<{ properties: Record<string, { const?: string }> }> } } }).json_schema
      .schema;
    assert.deepEqual(turnSchemaOutput(schema), OUTPUT);
    assert.deepEqual(schema.anyOf.map((b) => b.properties.tool?.const).filter(Boolean), ['orders__get']);
    assert.equal(
      turnSchemaOutput((buildPrompt(input('json_schema'), 8192).responseFormat as { json_schema: { schema: unknown } }).json_schema.schema),
      null,
      'without a schema the final answer is text',
    );
  });
});

describe('the gate checks a final answer against the output schema the request carried', () => {
  const native = JSON.stringify({ messages: [], tools: buildPrompt(input('native', OUTPUT), 8192).tools });
  const constrained = JSON.stringify({ messages: [], response_format: buildPrompt(input('json_schema', OUTPUT), 8192).responseFormat });

  test('a final_answer call matching the schema is a final answer carrying the result', () => {
    const r = verifyModelAnswer(completion(finalCall(GOOD)), native, contracts, ajv, 3);
    assert.ok(r.ok && r.answer.kind === 'final');
    assert.deepEqual(r.answer.kind === 'final' && r.answer.result, GOOD);
    assert.equal(r.answer.kind === 'final' && r.answer.content, JSON.stringify(GOOD), 'without text beside it, the text is the result');
  });

  test('an answer that breaks the schema is schema_mismatch, naming what broke; text instead of the call is malformed', () => {
    const bad = verifyModelAnswer(completion(finalCall({ ...GOOD, status: 'lost' })), native, contracts, ajv, 3);
    assert.equal(bad.ok ? null : bad.errorType, 'schema_mismatch');
    assert.match(bad.ok ? '' : bad.evidence, /^the final answer breaks the skill's output schema: .*status/);
    const missing = verifyModelAnswer(completion(finalCall({ order_id: 'O-12345678' })), native, contracts, ajv, 3);
    assert.equal(missing.ok ? null : missing.errorType, 'schema_mismatch');
    const text = verifyModelAnswer(completion({ content: 'Your order shipped.' }), native, contracts, ajv, 3);
    assert.match(text.ok ? '' : `${text.errorType}: ${text.evidence}`, /^malformed: this skill's final answer is a call of final_answer/);
    const withOther = verifyModelAnswer(
      completion({
        content: null,
        tool_calls: [...finalCall(GOOD).tool_calls, { id: 'b', type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-12345678"}' } }],
      }),
      native,
      contracts,
      ajv,
      3,
    );
    assert.equal(withOther.ok ? null : withOther.errorType, 'invalid_arguments');
  });

  test('a constrained turn: {"final_answer": <object of the schema>} passes with its result; text or a broken object does not', () => {
    const ok = verifyModelAnswer(completion({ content: JSON.stringify({ final_answer: GOOD }) }), constrained, contracts, ajv, 3);
    assert.deepEqual(ok.ok && ok.answer.kind === 'final' && ok.answer.result, GOOD);
    for (const v of ['Your order shipped.', { ...GOOD, order_id: 12345678 }]) {
      const r = verifyModelAnswer(completion({ content: JSON.stringify({ final_answer: v }) }), constrained, contracts, ajv, 3);
      assert.equal(r.ok ? null : r.errorType, 'schema_mismatch', JSON.stringify(v));
    }
  });

  test('without an output schema, a text final answer stays a final answer without a result', () => {
    const plain = JSON.stringify({ messages: [], tools: buildPrompt(input('native'), 8192).tools });
    const r = verifyModelAnswer(completion({ content: 'Your order shipped.' }), plain, contracts, ajv, 3);
    assert.ok(r.ok && r.answer.kind === 'final' && r.answer.result === undefined);
  });
});

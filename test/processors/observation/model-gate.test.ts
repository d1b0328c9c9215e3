/** Observation's gate on model answers: what stops a hallucinated tool or invalid arguments before any tool runs. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { verifyModelAnswer } from '../../../processors/observation/model-gate.ts';
import { turnSchema } from '../../../processors/model-wire.ts';
import { observe } from '../../../processors/observation/core.ts';
import { ToolCatalog, DEFAULT_CATALOG_DIR, createContractAjv } from '../../../tools/catalog.ts';
import { modelToolSpecs } from '../../../tools/model-config.ts';
import { DEFAULT_RULES_FILE, loadObservationRules } from '../../../processors/observation/rules.ts';
import { runState } from '../../../schemas/records.ts';

const ajv = createContractAjv();
const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, {}, ajv, modelToolSpecs({}, 'contracts'));
const contracts = (tool: string) => catalog.get(tool)?.validateInput;

const request = JSON.stringify({
  messages: [{ role: 'user', content: 'x' }],
  tools: [
    { type: 'function', function: { name: 'orders__get' } },
    { type: 'function', function: { name: 'shipping__track' } },
  ],
});
const completion = (message: Record<string, unknown>) => ({
  model: 'sim-1',
  choices: [{ message, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
});
const call = (name: string, args: string) => ({ id: 'call_1', type: 'function', function: { name, arguments: args } });

describe('verifyModelAnswer', () => {
  test('offered tools with valid arguments pass and are extracted under their catalog names', () => {
    // Both calls carry the server's id call_1: the extracted calls get the runtime's own, unique and deterministic.
    const r = verifyModelAnswer(
      completion({ content: null, tool_calls: [call('orders__get', '{"order_id":"O-12345678"}'), call('shipping__track', '{"order_id":"O-12345678"}')] }),
      request,
      contracts,
      ajv,
      3,
    );
    assert.ok(r.ok);
    assert.deepEqual(r.answer, {
      kind: 'tool_calls',
      content: null,
      calls: [
        { id: 'c0003n001', tool: 'orders.get', arguments: { order_id: 'O-12345678' } },
        { id: 'c0003n002', tool: 'shipping.track', arguments: { order_id: 'O-12345678' } },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      model: 'sim-1',
      reasoning: null,
    });
  });

  test('a tool the skill does not offer is hallucinated_tool, even when the catalog has it', () => {
    for (const name of ['orders__delete', 'refunds__create']) {
      const r = verifyModelAnswer(completion({ tool_calls: [call(name, '{}')] }), request, contracts, ajv);
      assert.deepEqual(r.ok ? null : r.errorType, 'hallucinated_tool', name);
    }
  });

  test("arguments that are not JSON, not an object, or break the tool's contract are invalid_arguments", () => {
    for (const args of ['{"order_id":', '"O-12345678"', '{"order_id":12345678}', '{}', '{"order_id":"O-12345678","extra":1}']) {
      const r = verifyModelAnswer(completion({ tool_calls: [call('orders__get', args)] }), request, contracts, ajv);
      assert.equal(r.ok ? null : r.errorType, 'invalid_arguments', args);
    }
  });

  test('a plan turn: a JSON plan of offered tools passes (tools by catalog name); prose, a plan that breaks the schema, or an unoffered tool does not', () => {
    const planRequest = JSON.stringify({
      ...JSON.parse(request),
      tool_choice: 'none',
      response_format: { type: 'json_schema', json_schema: { name: 'plan', strict: false, schema: {} } },
    });
    const plan = {
      steps: [
        { id: 'S1', tool: 'orders__get', input: { order_id: 'O-12345678' }, depends_on: [] },
        { id: 'S2', tool: 'shipping.track', input: { order_id: '{{S1.order_id}}' }, depends_on: ['S1'] },
      ],
      output: { eta: '{{S2.eta}}' },
    };
    const ok = verifyModelAnswer(completion({ content: JSON.stringify(plan) }), planRequest, contracts, ajv);
    assert.ok(ok.ok && ok.answer.kind === 'plan');
    assert.deepEqual(ok.answer.kind === 'plan' && ok.answer.plan.steps.map((s) => s.tool), ['orders.get', 'shipping.track']);
    // Models often wrap JSON in a Markdown fence despite the response format: the plan inside is taken.
    for (const fence of ['```json\n', '```\n']) {
      const fenced = verifyModelAnswer(completion({ content: `${fence}${JSON.stringify(plan)}\n\`\`\`` }), planRequest, contracts, ajv);
      assert.deepEqual(fenced.ok && fenced.answer.kind === 'plan' && fenced.answer.plan.steps.map((s) => s.id), ['S1', 'S2'], fence);
    }
    const prose = verifyModelAnswer(completion({ content: 'First look the order up.' }), planRequest, contracts, ajv);
    assert.equal(prose.ok ? null : prose.errorType, 'malformed');
    const noOutput = verifyModelAnswer(completion({ content: JSON.stringify({ steps: plan.steps }) }), planRequest, contracts, ajv);
    assert.match(noOutput.ok ? '' : `${noOutput.errorType}: ${noOutput.evidence}`, /^malformed: the plan breaks its schema: .*output/);
    const refund = verifyModelAnswer(
      completion({ content: JSON.stringify({ ...plan, steps: [{ ...plan.steps[0], tool: 'refunds.create' }] }) }),
      planRequest,
      contracts,
      ajv,
    );
    assert.match(refund.ok ? '' : `${refund.errorType}: ${refund.evidence}`, /^hallucinated_tool: plan step S1 names "refunds.create"/);
  });

  test('calls written as small models write them are read as calls and gated like native ones, never taken as a final answer', () => {
    const order = { order_id: 'O-12345678' };
    const forms: Array<[string, string, string]> = [
      ['<tool_call>\n{"name": "orders__get", "arguments": {"order_id": "O-12345678"}}\n</tool_call>', 'tool_call tags', 'orders.get'],
      ['```json\n{"name": "orders__get", "arguments": {"order_id": "O-12345678"}}\n```', 'JSON', 'orders.get'],
      // Qwen2.5-Coder-1.5B: a sentence, then one fence per call; the catalog's dotted name as often as the wire name.
      [
        'I will look up the order and its shipment.\n\n```json\n{\n  "name": "orders.get",\n  "arguments": {"order_id": "O-12345678"}\n}\n```\n\n```json\n{"name": "shipping__track", "arguments": {"order_id": "O-12345678"}}\n```',
        'fenced JSON',
        'orders.get,shipping.track',
      ],
      ['```json\n[{"name": "orders__get", "arguments": {"order_id": "O-12345678"}}]\n```\nThat is all.', 'fenced JSON', 'orders.get'],
      [
        'To answer I call {"name": "orders__get", "arguments": {"order_id": "O-12345678"}} first, then {"name": "shipping__track", "parameters": {"order_id": "O-12345678"}}.',
        'JSON in prose',
        'orders.get,shipping.track',
      ],
    ];
    // Qwen2.5-Coder-1.5B, told its prose answer was not grounded: a sentence naming the call, arguments as an object literal.
    forms.push(["Call `orders.get` with `{order_id: 'O-12345678'}`.", 'call described in prose', 'orders.get']);
    forms.push(['I will use the shipping__track tool with {"order_id": "O-12345678"} now.', 'call described in prose', 'shipping.track']);
    for (const [content, form, tools] of forms) {
      const r = verifyModelAnswer(completion({ content }), request, contracts, ajv, 2);
      assert.ok(r.ok && r.answer.kind === 'tool_calls', `${form}: ${r.ok ? r.answer.kind : r.evidence}`);
      assert.equal(r.answer.calls.map((c) => c.tool).join(','), tools, form);
      assert.deepEqual(r.answer.calls[0]!.arguments, order, form);
      assert.match(r.evidence, new RegExp(`written as text: ${form}`), 'the verdict records how the answer was read');
    }
    // The same gate: an unoffered tool or broken arguments in a fence are refused, not answered.
    const unoffered = verifyModelAnswer(
      completion({ content: 'Sure.\n```json\n{"name": "refunds__create", "arguments": {"order_id": "O-12345678"}}\n```' }),
      request,
      contracts,
      ajv,
    );
    assert.equal(unoffered.ok ? null : unoffered.errorType, 'hallucinated_tool');
    const broken = verifyModelAnswer(
      completion({ content: 'Calling {"name": "orders__get", "arguments": {"order_id": "12345678"}} now.' }),
      request,
      contracts,
      ajv,
    );
    assert.equal(broken.ok ? null : broken.errorType, 'invalid_arguments');
    // A described call still goes through the contract; a sentence that only mentions a tool is prose.
    const loose = verifyModelAnswer(completion({ content: "Call `orders.get` with `{order_id: '12345678'}`." }), request, contracts, ajv);
    assert.equal(loose.ok ? null : loose.errorType, 'invalid_arguments');
    const mention = verifyModelAnswer(completion({ content: 'You can call our support line with any question.' }), request, contracts, ajv);
    assert.ok(mention.ok && mention.answer.kind === 'final');
    // JSON that is not a call stays part of a final answer.
    const data = verifyModelAnswer(
      completion({ content: 'Your order: ```json\n{"order_id": "O-12345678", "status": "shipped"}\n``` {"name": "Alice"}' }),
      request,
      contracts,
      ajv,
    );
    assert.ok(data.ok && data.answer.kind === 'final');
  });

  test('text without tool calls is a final answer; neither is malformed', () => {
    const final = verifyModelAnswer(completion({ content: 'Your order shipped.' }), request, contracts, ajv);
    assert.ok(final.ok && final.answer.kind === 'final');
    const empty = verifyModelAnswer(completion({ content: '' }), request, contracts, ajv);
    assert.equal(empty.ok ? null : empty.errorType, 'malformed');
  });

  test('a constrained turn (tool-calls: json_schema) is one call of an offered tool, a final answer or a question; the contract still decides', () => {
    const schema = turnSchema([{ wire: 'orders__get', parameters: catalog.get('orders.get')!.spec.parameters as Record<string, unknown> }]);
    const turnRequest = JSON.stringify({ messages: [], response_format: { type: 'json_schema', json_schema: { name: 'turn', schema } } });
    const asked = (content: string) => verifyModelAnswer(completion({ content }), turnRequest, contracts, ajv, 2);
    const call1 = asked('```json\n{"tool": "orders__get", "arguments": {"order_id": "O-12345678"}}\n```');
    assert.ok(call1.ok && call1.answer.kind === 'tool_calls');
    assert.deepEqual(call1.ok && call1.answer.kind === 'tool_calls' && call1.answer.calls, [
      { id: 'c0002n001', tool: 'orders.get', arguments: { order_id: 'O-12345678' } },
    ]);
    const done = asked('{"final_answer": "Order O-12345678 shipped."}');
    assert.deepEqual(done.ok && done.answer.kind === 'final' && done.answer.content, 'Order O-12345678 shipped.');
    const question = asked('{"ask_customer": "What is your order number?"}');
    assert.deepEqual(question.ok && question.answer.kind === 'ask' && question.answer.question, 'What is your order number?');
    assert.equal(((r) => (r.ok ? null : r.errorType))(asked('{"tool": "shipping__track", "arguments": {"order_id": "O-12345678"}}')), 'hallucinated_tool');
    assert.equal(((r) => (r.ok ? null : r.errorType))(asked('{"tool": "orders__get", "arguments": {"order_id": "12"}}')), 'invalid_arguments');
    assert.equal(((r) => (r.ok ? null : r.errorType))(asked('Sure! Let me look that up.')), 'malformed');
  });

  test('ask_customer is a question to the customer, and only alone in its turn', () => {
    const withAsk = JSON.stringify({
      messages: [],
      tools: [
        { type: 'function', function: { name: 'orders__get' } },
        { type: 'function', function: { name: 'ask_customer' } },
      ],
    });
    const q = verifyModelAnswer(completion({ tool_calls: [call('ask_customer', '{"question":"Which order?"}')] }), withAsk, contracts, ajv);
    assert.deepEqual(q.ok && q.answer.kind === 'ask' && q.answer.question, 'Which order?');
    const both = verifyModelAnswer(
      completion({ tool_calls: [call('ask_customer', '{"question":"Which order?"}'), call('orders__get', '{"order_id":"O-12345678"}')] }),
      withAsk,
      contracts,
      ajv,
    );
    assert.equal(both.ok ? null : both.errorType, 'invalid_arguments');
  });

  test('a reflection turn must answer JSON matching the reflection schema', () => {
    const reflectionRequest = JSON.stringify({ messages: [], response_format: { type: 'json_schema', json_schema: { name: 'reflection' } } });
    const good = {
      data_completeness: { verdict: 'PASS', reason: '' },
      logic_consistency: { verdict: 'PASS', reason: '' },
      policy_compliance: { verdict: 'PASS', reason: '' },
      uncertainty: { verdict: 'MISSING', reason: 'x' },
      action: 'escalate',
      reason: 'y',
    };
    const ok = verifyModelAnswer(completion({ content: JSON.stringify(good) }), reflectionRequest, contracts, ajv);
    assert.ok(ok.ok && ok.answer.kind === 'reflection');
    const bad = verifyModelAnswer(completion({ content: JSON.stringify({ ...good, action: 'pray' }) }), reflectionRequest, contracts, ajv);
    assert.equal(bad.ok ? null : bad.errorType, 'malformed');
  });
});

test('observe(): a model answer becomes a verdict whose extracted data is the verified answer; a rejected one names the gate', async () => {
  const config = {
    catalog,
    ajv,
    rules: loadObservationRules(DEFAULT_RULES_FILE, ajv, (t) => catalog.get(t) !== undefined),
    classifier: {
      model: 'must-not-run',
      classify: async () => {
        throw new Error('the classifier must not read model answers');
      },
    },
  };
  const step = (body: unknown) => ({
    step_id: 'M1',
    tool: 'model.chat',
    input_json: request,
    idempotency_key: 't:1:M1',
    attempts: 1,
    status_code: 200,
    response_time_ms: 30,
    response_raw: JSON.stringify(body),
    data_json: JSON.stringify(body),
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
  });
  const run = runState({ plan_json: JSON.stringify({ flow: { id: 'react:order-status', version: 1 }, steps: [], output: {} }) });
  const good = await observe(
    { thought_id: 't', iteration: 1, run, results: [step(completion({ tool_calls: [call('orders__get', '{"order_id":"O-12345678"}')] }))], dead_letter: null },
    config,
  );
  assert.equal(good.verdicts[0]!.valid, true);
  assert.equal(JSON.parse(good.verdicts[0]!.extracted_data_json!).kind, 'tool_calls');
  const bad = await observe(
    { thought_id: 't', iteration: 1, run, results: [step(completion({ tool_calls: [call('sim__nonexistent_tool', '{}')] }))], dead_letter: null },
    config,
  );
  assert.deepEqual([bad.verdicts[0]!.valid, bad.verdicts[0]!.error_type], [false, 'hallucinated_tool']);
  assert.ok(bad.verdicts[0]!.audit_trail.some((c) => c.name === 'model_answer' && !c.passed));
});

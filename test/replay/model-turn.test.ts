/**
 * The HTML report's view of a model turn, from a hand-built timeline of a 2-turn ReAct run (no
 * broker): the request by role, the tools and parameters, the raw answer, tokens and model, and what
 * Thought made of it, collapsed; secrets masked. test/loop/context-window.test.ts opens a real run's
 * report in Chromium.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mask, modelTurnView } from '../../replay/model-turn.ts';
import { renderHtml } from '../../replay/render-html.ts';
import type { IterationView, StepView, Timeline } from '../../replay/timeline.ts';

const ref = (offset: number) => ({ topic: 'x', partition: 0, offset: String(offset) });
const usage = (p: number, c: number) => ({ prompt_tokens: p, completion_tokens: c, total_tokens: p + c });

function step(
  iteration: number,
  step_id: string,
  tool: string,
  input: unknown,
  response: string,
  extracted: unknown,
  valid = true,
  checks: StepView['verdict'] extends infer V ? (V extends { checks: infer C } ? C : never) : never = [],
): StepView {
  return {
    iteration,
    step_id,
    tool,
    attempt: 1,
    input,
    idempotency_key: `k:${iteration}:${step_id}`,
    status: valid ? 'verified' : 'invalid',
    result: {
      ref: ref(iteration),
      at: '2026-01-01T00:00:00.000Z',
      tool,
      status_code: 200,
      response_time_ms: 12,
      attempts: 1,
      retries: 0,
      error: null,
      fallback_from: null,
      fallback_reason: null,
      response,
    },
    verdict: {
      ref: ref(iteration),
      at: '2026-01-01T00:00:00.000Z',
      valid,
      error_type: valid ? 'ok' : 'hallucinated_tool',
      confidence: valid ? 1 : 0,
      checks,
      extracted,
    },
    dead_letter: null,
    extra: {},
  };
}

const request = (turn: number) => ({
  model: 'sim-1',
  messages: [
    { role: 'system', content: 'Skill: order-status@1\n\nrules\n\nFacts the user gave (keep them in mind):\n- order_id: O-12345678' },
    { role: 'user', content: 'Where is my order O-12345678?' },
    ...(turn > 1
      ? [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1_1', type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-12345678"}' } }],
          },
          { role: 'tool', tool_call_id: 'call_1_1', content: '{"status":"shipped"}' },
        ]
      : []),
  ],
  tools: [{ type: 'function', function: { name: 'orders__get', description: 'An order by its id.', parameters: {} } }],
  tool_choice: 'auto',
  temperature: 0,
  max_tokens: 512,
  api_key: 'sk-live-should-never-show',
});

function timeline(): Timeline {
  const waves: Array<[number, StepView[]]> = [
    [
      1,
      [
        step(1, 'M1', 'model.chat', request(1), '{"model":"sim-1","choices":[{"message":{"tool_calls":[]}}],"echo":"Authorization: Bearer sk-echoed-secret"}', {
          kind: 'tool_calls',
          content: null,
          calls: [{ id: 'call_1_1', tool: 'orders.get', arguments: { order_id: 'O-12345678' } }],
          usage: usage(120, 20),
          model: 'sim-1',
        }),
      ],
    ],
    [2, [step(2, 'M1_1', 'orders.get', { order_id: 'O-12345678' }, '{"status":"shipped"}', { status: 'shipped' })]],
    [
      3,
      [
        step(3, 'M2', 'model.chat', request(2), '{"choices":[{"message":{"content":"Order O-12345678 has shipped."}}]}', {
          kind: 'final',
          content: 'Order O-12345678 has shipped.',
          usage: usage(180, 9),
          model: 'sim-1',
        }),
      ],
    ],
    [
      4,
      [
        step(4, 'M3', 'model.chat', request(2), '{"choices":[]}', null, false, [
          { name: 'model_answer', passed: false, evidence: 'tool sim__nonexistent_tool was not offered' },
        ]),
      ],
    ],
  ];
  const iterations = waves.map(([iteration, steps]): IterationView => ({
    iteration,
    requests: [],
    requested_at: null,
    executed_at: null,
    observed_at: null,
    timings: { action_ms: null, observation_ms: null, thought_ms: null },
    steps,
    extra: {},
  }));
  return {
    format: 'tao.replay.v1',
    thought_id: 't-1',
    namespace: 'ns',
    bounds: { from: null, to: null },
    scanned: [],
    counts: {},
    status: 'completed',
    forked_from: null,
    tasks: [],
    plan: null,
    iterations,
    reflections: [],
    outcomes: [],
    outcome: null,
    state: null,
    dead_letters: [],
    undecodable: [],
  };
}

test('a model turn shows the request by role, the tools and parameters, the answer, tokens, model, and the next wave Thought made of it', () => {
  const t = timeline();
  const v = modelTurnView(t.iterations[0]!.steps[0]!, t)!;
  assert.deepEqual(
    v.request.messages.map((m) => m.role),
    ['system', 'user'],
  );
  assert.deepEqual(v.request.tools, [{ name: 'orders__get', description: 'An order by its id.' }]);
  assert.deepEqual(v.request.parameters, { model: 'sim-1', tool_choice: 'auto', temperature: 0, max_tokens: 512 });
  assert.deepEqual(v.request.hidden, ['api_key'], 'an unknown key is named, its value not shown');
  assert.deepEqual([v.model, v.usage?.total_tokens], ['sim-1', 140]);
  assert.deepEqual(v.decision, {
    kind: 'tool_calls',
    calls: [{ step_id: 'M1_1', tool: 'orders.get', arguments: { order_id: 'O-12345678' }, status: 'verified' }],
  });
  assert.deepEqual(modelTurnView(t.iterations[2]!.steps[0]!, t)!.decision, { kind: 'final', answer: 'Order O-12345678 has shipped.' });
  assert.equal(modelTurnView(t.iterations[3]!.steps[0]!, t)!.decision.kind, 'rejected');
  assert.equal(modelTurnView(t.iterations[1]!.steps[0]!, t), null, 'a tool step is not a model turn');
});

test('the HTML report renders each model turn collapsed, with no secret in the page', () => {
  const html = renderHtml(timeline());
  const turns = html.match(/<details class="model-turn"[^>]*>/g) ?? [];
  assert.equal(turns.length, 3);
  assert.ok(
    turns.every((d) => !/\bopen\b/.test(d)),
    'collapsed by default',
  );
  assert.match(html, /<summary>model turn · 2 messages · 1 tools · sim-1 · 140 tokens<\/summary>/);
  assert.match(html, /<div class="msg role-assistant"><span class="role">assistant<\/span><p class="call">→ <code>orders__get<\/code>/);
  assert.match(html, /<th>tool_choice<\/th><td><code>&quot;auto&quot;<\/code>/);
  assert.match(html, /The next wave: 1 tool call\(s\)\.<\/p><ul><li><strong>M1_1<\/strong> <code>orders\.get<\/code>/);
  assert.match(html, /The final answer:<\/p><pre class="final">Order O-12345678 has shipped\.<\/pre>/);
  assert.match(html, /Rejected by Observation's gate \(hallucinated_tool\): model_answer: tool sim__nonexistent_tool was not offered/);
  assert.doesNotMatch(html, /sk-live-should-never-show|sk-echoed-secret/);
  assert.match(html, /Bearer \[masked\]/);
  assert.doesNotMatch(html, /<code>\{&quot;model&quot;/, 'the request is not dumped as one line of JSON');
});

test('mask hides bearer tokens and key-like JSON fields, and leaves other text alone', () => {
  assert.equal(mask('Authorization: Bearer abc.DEF-123'), 'Authorization: Bearer [masked]');
  assert.equal(mask('{"api_key":"sk-1","max_tokens":512}'), '{"api_key":"[masked]","max_tokens":512}');
  assert.equal(mask('{"order_id":"O-12345678"}'), '{"order_id":"O-12345678"}');
});

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildPrompt, fromWireName, toWireName, estimateTokens, type PromptInput, type PromptTurn } from '../../../processors/thought/model/prompt.ts';
import type { ChatMessage } from '../../../processors/model-wire.ts';

const WINDOW = 4096;

const tools = [
  {
    name: 'orders.get',
    description: 'An order by its id.',
    parameters: { type: 'object', required: ['order_id'], properties: { order_id: { type: 'string' } } },
  },
  {
    name: 'shipping.track',
    description: 'A parcel by carrier and tracking number.',
    parameters: { type: 'object', properties: { carrier: { type: 'string' }, tracking: { type: 'string' } } },
  },
];

/** A turn whose tool answered with a long body (an order with a long history of events). */
function turn(n: number, rawChars: number): PromptTurn {
  const events = Array.from({ length: Math.ceil(rawChars / 60) }, (_, i) => ({
    at: `2026-11-${String((i % 28) + 1).padStart(2, '0')}`,
    event: `scanned at hub ${n}-${i}`,
  }));
  return {
    turn: n,
    content: `Turn ${n}: I need the order's shipment to answer.`,
    calls: [
      {
        id: `call_${n}`,
        tool: n % 2 ? 'orders.get' : 'shipping.track',
        arguments: n % 2 ? { order_id: 'O-12345678' } : { carrier: 'DHL', tracking: `JD${n}` },
        valid: true,
        extracted: { status: 'shipped', turn: n },
        raw: JSON.stringify({ order_id: 'O-12345678', status: 'shipped', events }),
        error: null,
      },
    ],
  };
}

function input(turns: PromptTurn[], overrides: Partial<PromptInput> = {}): PromptInput {
  return {
    system: 'Answer with tool calls until you can give the final answer. Quote only what the tools returned.',
    skill: { ref: 'order-status@1', prompt: 'Find the order, then its shipment. The final answer names the status and the ETA.', tools },
    task: 'Where is my order O-12345678? It was a birthday present, please hurry.',
    facts: { order_id: 'O-12345678', email: 'ada@example.com' },
    turns,
    reflections: [],
    mode: 'react',
    ...overrides,
  };
}

/** Counted from the messages themselves, not from the builder's own arithmetic. */
const promptTokens = (messages: ChatMessage[], toolsJson: string): number =>
  messages.reduce(
    (n, m) =>
      n +
      4 +
      estimateTokens(m.content ?? '') +
      ('tool_calls' in m && m.tool_calls
        ? m.tool_calls.reduce((k, c) => k + 4 + estimateTokens(c.function.name) + estimateTokens(c.function.arguments), 0)
        : 0),
    0,
  ) + estimateTokens(toolsJson);

describe('buildPrompt', () => {
  test('a 12-turn ReAct run whose raw history is 3x the window: every prompt fits, and the task and every fact are in every prompt', () => {
    const all = Array.from({ length: 12 }, (_, i) => turn(i + 1, 5200));
    const rawTokens = all.reduce((n, t) => n + estimateTokens(t.calls[0]!.raw), 0);
    assert.ok(rawTokens >= 3 * WINDOW, `raw history is ${rawTokens} tokens, the test needs at least ${3 * WINDOW}`);
    for (let k = 0; k <= 12; k++) {
      const built = buildPrompt(input(all.slice(0, k)), WINDOW);
      const counted = promptTokens(built.messages, built.tools.map((t) => JSON.stringify(t)).join(''));
      assert.equal(built.overflow, false, `turn ${k}`);
      assert.ok(counted + built.maxTokens <= WINDOW, `turn ${k}: ${counted} prompt tokens + ${built.maxTokens} generation > ${WINDOW}`);
      assert.equal(built.tokens.generation, WINDOW * 0.1 - ((WINDOW * 0.1) % 1));
      const system = built.messages[0]!.content!;
      assert.match(system, /^Skill: order-status@1\n/);
      for (const [k2, v] of Object.entries(input([]).facts)) assert.ok(system.includes(`- ${k2}: ${v}`), `turn ${k}: fact ${k2} missing`);
      assert.deepEqual(built.messages[1], { role: 'user', content: input([]).task });
      // The newest turn is always there in full protocol shape: its tool_calls and a tool message per call.
      if (k > 0) {
        const last = all[k - 1]!.calls[0]!;
        const assistant = [...built.messages].reverse().find((m) => m.role === 'assistant');
        assert.equal(assistant && 'tool_calls' in assistant ? assistant.tool_calls?.[0]?.id : undefined, last.id);
        assert.ok(built.messages.some((m) => m.role === 'tool' && m.tool_call_id === last.id));
      }
    }
    const last = buildPrompt(input(all), WINDOW);
    assert.ok(last.compaction.reducedObservations > 0, 'older observations were reduced to their extracted fields');
  });

  test('a run longer than the window holds even as extracted fields: the oldest turns fold into a summary, the newest stays whole', () => {
    const many = Array.from({ length: 60 }, (_, i) => turn(i + 1, 800));
    const built = buildPrompt(input(many), WINDOW);
    assert.equal(built.overflow, false);
    assert.ok(built.compaction.foldedTurns + built.compaction.omittedTurns > 0);
    assert.ok(built.tokens.prompt + built.maxTokens <= WINDOW);
    // The summary joins the one system message: strict chat templates refuse a second one.
    assert.equal(built.messages.filter((m) => m.role === 'system').length, 1);
    assert.match(built.messages[0]!.content!, /\n\nEarlier turns/);
    assert.ok(built.messages.some((m) => m.role === 'tool' && m.tool_call_id === 'call_60'));
  });

  test('the same input gives the same bytes (a replay rebuilds the recorded prompt)', () => {
    const turns = Array.from({ length: 6 }, (_, i) => turn(i + 1, 2000));
    assert.equal(JSON.stringify(buildPrompt(input(turns), WINDOW)), JSON.stringify(buildPrompt(structuredClone(input(turns)), WINDOW)));
  });

  test('a short run is sent whole: raw tool outputs, no compaction', () => {
    const built = buildPrompt(input([turn(1, 200)]), WINDOW);
    assert.deepEqual(built.compaction, { reducedObservations: 0, cutOutputs: 0, foldedTurns: 0, omittedTurns: 0, skillCut: false });
    const tool = built.messages.find((m) => m.role === 'tool')!;
    assert.match(tool.content!, /"events":/);
    assert.deepEqual(
      built.tools.map((t) => t.function.name),
      ['orders__get', 'shipping__track', 'ask_customer'],
    );
  });

  test('over budget, older observations shrink to their extracted fields first; the newest keeps its raw output', () => {
    const built = buildPrompt(input([turn(1, 12000), turn(2, 300)]), WINDOW);
    const [older, newer] = built.messages.filter((m) => m.role === 'tool') as [ChatMessage, ChatMessage];
    assert.deepEqual(JSON.parse(older.content!), { status: 'shipped', turn: 1 });
    assert.match(newer.content!, /"events":/);
  });

  test('a tool output too long for the results share is cut with a marker', () => {
    const built = buildPrompt(input([turn(1, 20000)]), WINDOW);
    const tool = built.messages.find((m) => m.role === 'tool')!;
    assert.match(tool.content!, /…\[cut \d+ chars\]$/);
    assert.ok(built.compaction.cutOutputs >= 1);
  });

  test('protected facts that alone exceed the window are reported as overflow, never cut', () => {
    const facts = { note: 'x'.repeat(WINDOW * 5) };
    const built = buildPrompt(input([], { facts }), WINDOW);
    assert.equal(built.overflow, true);
    assert.ok(built.messages[0]!.content!.includes(facts.note));
  });

  test('a reflection turn asks for the structured reflection and offers no tools', () => {
    const built = buildPrompt(input([turn(1, 100)], { mode: 'reflection', reflections: ['orders.get failed twice: timeout'] }), WINDOW);
    assert.match(built.messages[0]!.content!, /^Skill: order-status@1\nTurn: reflection\n/);
    assert.deepEqual(built.tools, []);
    assert.equal((built.responseFormat as { type: string }).type, 'json_schema');
    assert.ok(built.messages.some((m) => m.role === 'system' && m.content!.includes('1. orders.get failed twice: timeout')));
  });

  test('Chinese text counts a token per character', () => {
    assert.equal(estimateTokens('我的订单到哪了'), 7);
    assert.equal(estimateTokens('abcdefgh'), 2);
  });

  test('wire names are reversible', () => {
    for (const name of ['orders.get', 'billing.get_invoice', 'status.service']) assert.equal(fromWireName(toWireName(name)), name);
    assert.match(toWireName('billing.get_invoice'), /^[a-zA-Z0-9_-]{1,64}$/);
  });
});

test('a ticket in another language than English: the last message asks for the answer in it too (the 1.5B answered Chinese tickets in English under the system line alone)', () => {
  const zh = buildPrompt(input([turn(1, 100)], { task: '我的订单 O-12345678 到哪了', toolCalls: 'json_schema', language: 'zh' }), 8192);
  assert.match(zh.messages.at(-1)!.content!, /^Result of orders__get: [\s\S]*\n\(Write the final answer in Chinese\.\)$/);
  const en = buildPrompt(input([turn(1, 100)], { toolCalls: 'json_schema' }), 8192);
  assert.doesNotMatch(en.messages.at(-1)!.content!, /Write the final answer in/);
});

describe('what the last message says (a small model heeds it most)', () => {
  const sheet = 'Verified values (write them exactly as given here; never an amount in cents as money):\n- orders.get: order_id "O-12345678", status "shipped"';

  test('a native turn that may not answer yet asks for the call in its form, on the first turn in the ticket message itself', () => {
    const built = buildPrompt(input([], { answerable: false, toolCalls: 'native' }), WINDOW);
    assert.deepEqual(
      built.messages.map((m) => m.role),
      ['system', 'user'],
    );
    assert.match(
      built.messages[1]!.content,
      /^Where is my order O-12345678\? It was a birthday present, please hurry\.\n\(Reply with one tool call and no other text: \{"name": "<tool>", "arguments": \{\.\.\.\}\}, the tool one of orders__get, shipping__track, ask_customer\.\)$/,
    );
    const constrained = buildPrompt(input([], { answerable: false, toolCalls: 'json_schema' }), WINDOW);
    assert.doesNotMatch(constrained.messages[1]!.content, /Reply with one tool call/, 'a constrained turn is held to its schema instead');
  });

  test("after a native turn's tool results, the verified values are a user message of their own, last; never before a final answer is offered", () => {
    const built = buildPrompt(input([turn(1, 100)], { toolCalls: 'native', sheet }), WINDOW);
    assert.deepEqual(
      built.messages.slice(-3).map((m) => m.role),
      ['assistant', 'tool', 'user'],
    );
    assert.equal(built.messages.at(-1)!.content, sheet);
    const early = buildPrompt(input([turn(1, 100)], { toolCalls: 'native', sheet, answerable: false }), WINDOW);
    assert.doesNotMatch(JSON.stringify(early.messages), /Verified values/);
    assert.match(early.messages.at(-1)!.content, /^\(Reply with one tool call/);
  });

  test('in a constrained turn the verified values end the results message', () => {
    const built = buildPrompt(input([turn(1, 100)], { toolCalls: 'json_schema', sheet, language: 'zh' }), WINDOW);
    const last = built.messages.at(-1)!;
    assert.equal(last.role, 'user');
    assert.match(
      last.content,
      /^Result of orders__get: .*\n\nVerified values .*\n- orders\.get: order_id "O-12345678", status "shipped"\n\(Write the final answer in Chinese\.\)$/s,
    );
  });
});

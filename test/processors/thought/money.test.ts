/**
 * Money in the model loop, as pure functions: the price table (TAO_LLM_PRICES), what each answer
 * costs (rejected answers included), the run's cost in its outcome, and the money budget
 * (TAO_MONEY_BUDGET) ending a run BEFORE the turn whose most expensive answer would cross it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import {
  parsePriceTable,
  priceOf,
  turnCeiling,
  usageCost,
  parseModelState,
  type ModelLoopConfig,
  type ReactSkill,
} from '../../../processors/thought/model/state.ts';
import { DEFAULT_SYSTEM_RULES } from '../../../processors/thought/model/prompt.ts';
import { promptUndercount } from '../../../processors/thought/model/turn.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import { moneySettings } from '../../../processors/wiring/index.ts';
import { ConfigError } from '../../../runtime/errors.ts';
import type { Outcome, Verdict } from '../../../schemas/types.gen.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { observed, requestOf as request } from './react-fixtures.ts';

const world = loadWorld();
const skill: ReactSkill = {
  name: 'order-status',
  version: 1,
  ref: 'order-status@1',
  prompt: 'Find the order, then its shipment.',
  allowedTools: ['orders.get', 'shipping.track'],
  maxModelTurns: 6,
  tokenBudget: 100000,
  contextWindow: 8192,
  maxTokens: 512,
  maxReplans: 2,
};
const PRICES = parsePriceTable(JSON.stringify({ 'gpt-big': { input: 10, output: 30, cached: 1 }, 'gpt-small': { input: 1, output: 2 } }), 'TAO_LLM_PRICES');
const reactPlanner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(order_status 0.990 order-status@1)', skill: 'order-status', facts: { order_id: 'O-12345678' } }),
};

function config(money: Partial<ModelLoopConfig> = {}): ThoughtConfig {
  const loop: ModelLoopConfig = {
    tool: 'model.chat',
    skill: (name) => (name === skill.name ? skill : undefined),
    toolSpec: (name) => {
      const spec = world.catalog.get(name)?.spec;
      return spec && { name: spec.name, description: spec.description, parameters: spec.parameters };
    },
    system: DEFAULT_SYSTEM_RULES,
    models: { primary: 'gpt-big', fallback: 'gpt-small', fallbackTool: 'model.chat_fallback' },
    prices: PRICES,
    ...money,
  };
  return thoughtConfig(world, { planner: reactPlanner, model: loop });
}

const outcome = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;
const usage = { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 };

function modelVerdict(stepId: string, data: unknown, valid = true, tool = 'model.chat', fallbackFrom: string | null = null): Verdict {
  return {
    step_id: stepId,
    tool,
    valid,
    extracted_data_json: JSON.stringify(data),
    confidence_score: valid ? 1 : 0,
    error_type: valid ? 'ok' : 'hallucinated_tool',
    audit_trail: valid ? [] : [{ name: 'model_answer', passed: false, evidence: 'tool call 1 names "x"' }],
    status_code: 200,
    response_time_ms: 20,
    attempts: 1,
    fallback_from: fallbackFrom,
  };
}
const toolVerdict = (stepId: string, tool: string, data: unknown): Verdict => ({
  step_id: stepId,
  tool,
  valid: true,
  extracted_data_json: JSON.stringify(data),
  confidence_score: 1,
  error_type: 'ok',
  audit_trail: [],
  status_code: 200,
  response_time_ms: 20,
  attempts: 1,
  fallback_from: null,
});
const calls = (model: string): ModelAnswer & { model: string } => ({
  kind: 'tool_calls',
  content: null,
  calls: [{ id: 'c1', tool: 'orders.get', arguments: { order_id: 'O-12345678' } }],
  usage,
  model,
});

describe('the price table', () => {
  test('parses, and names the model and field of any mistake in one line', () => {
    assert.deepEqual(PRICES['gpt-big'], { input: 10, output: 30, cached: 1 });
    const bad: Array<[string, RegExp]> = [
      ['not json', /^TAO_LLM_PRICES is not valid JSON/],
      ['[]', /must be a JSON object of model name/],
      ['{"m": {"input": 1}}', /^TAO_LLM_PRICES: "m"\."output" must be a number >= 0 \(price per million tokens\), got nothing$/],
      ['{"m": {"input": -1, "output": 1}}', /"m"\."input" must be a number >= 0 .*got -1/],
      ['{"m": {"input": 1, "output": "2"}}', /"m"\."output" .*got "2"/],
      ['{"m": {"input": 1, "output": 2, "cache": 1}}', /"m" has an unknown key "cache"/],
    ];
    for (const [text, message] of bad) {
      assert.throws(
        () => parsePriceTable(text, 'TAO_LLM_PRICES'),
        (e: Error) => e instanceof ConfigError && message.test(e.message) && !e.message.includes('\n'),
        text,
      );
    }
  });

  test('a model is priced by its entry, the longest prefix entry, or *', () => {
    const t = parsePriceTable(
      JSON.stringify({ 'gpt-4o': { input: 2.5, output: 10 }, 'gpt-4o-mini': { input: 0.15, output: 0.6 }, '*': { input: 1, output: 1 } }),
      'x',
    );
    assert.equal(priceOf(t, 'gpt-4o-mini-2024-07-18')!.input, 0.15);
    assert.equal(priceOf(t, 'gpt-4o-2024-08-06')!.input, 2.5);
    assert.equal(priceOf(t, 'gpt-4oo')!.input, 1, 'a prefix only at a separator');
    assert.equal(priceOf(t, 'llama')!.input, 1);
    assert.equal(priceOf(PRICES, 'llama'), null);
  });

  test('an answer costs its uncached prompt tokens at input, cached ones at the cached price, completion at output', () => {
    assert.equal(usageCost(PRICES['gpt-big']!, usage), 0.013); // 1000 × 10 + 100 × 30, per million
    assert.equal(usageCost(PRICES['gpt-big']!, { ...usage, cached_tokens: 800 }), 0.0058); // 200 × 10 + 800 × 1 + 100 × 30
    assert.equal(usageCost(PRICES['gpt-small']!, { ...usage, cached_tokens: 800 }), 0.0012, 'no cached price: input');
    assert.equal(turnCeiling(PRICES['gpt-big']!, 2000, 512), 0.03536);
  });

  test('TAO_LLM_PRICES inline or as a file; a budget needs a price for every model a turn may ask', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tao-prices-'));
    try {
      const file = join(dir, 'prices.json');
      writeFileSync(file, JSON.stringify({ 'sim-1': { input: 1, output: 2 } }));
      assert.deepEqual((await moneySettings({ TAO_LLM_PRICES: file })).prices, { 'sim-1': { input: 1, output: 2 } });
      assert.deepEqual(await moneySettings({ TAO_LLM_PRICES: '{"a": {"input": 1, "output": 1}}', TAO_MONEY_BUDGET: '0.5', TAO_LLM_MODEL: 'a' }), {
        prices: { a: { input: 1, output: 1 } },
        moneyBudget: 0.5,
      });
      await assert.rejects(
        moneySettings({ TAO_LLM_PRICES: join(dir, 'missing.json') }),
        /TAO_LLM_PRICES: cannot read the price file .*missing\.json \(ENOENT\)/,
      );
      writeFileSync(file, '{"sim-1": {"input": 1}}');
      await assert.rejects(moneySettings({ TAO_LLM_PRICES: file }), /^ConfigError: TAO_LLM_PRICES file .*prices\.json: "sim-1"\."output" must be a number/);
      await assert.rejects(moneySettings({ TAO_MONEY_BUDGET: '1', TAO_LLM_MODEL: 'a' }), /TAO_MONEY_BUDGET=1 needs TAO_LLM_PRICES: a price for a/);
      await assert.rejects(
        moneySettings({ TAO_MONEY_BUDGET: '1', TAO_LLM_MODEL: 'a', TAO_LLM_FALLBACK_MODEL: 'b', TAO_LLM_PRICES: '{"a": {"input": 1, "output": 1}}' }),
        /TAO_LLM_PRICES prices no b \(add it, or "\*"\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the run's cost", () => {
  test("every answer is priced by the model that answered (a fallback's by its price), rejected ones too; the outcome carries the total", () => {
    const c = config();
    const t1 = onTask(task('Where is my order O-12345678?'), c);
    assert.equal(parseModelState(request(t1)!.run).cost, 0);
    // Turn 1: rejected by the gate, still paid (1000 × 10 + 100 × 30 = 0.013 on gpt-big).
    const t1b = onObservation(
      observed(t1, (req) => [modelVerdict(req.steps[0]!.step_id, { spent: { usage, model: 'gpt-big' } }, false)]),
      c,
    );
    assert.equal(parseModelState(request(t1b)!.run).cost, 0.013);
    // Turn 2: answered by the fallback (its price: 1000 × 1 + 100 × 2 = 0.0012).
    const w = onObservation(
      observed(t1b, (req) => [modelVerdict(req.steps[0]!.step_id, calls('gpt-small'), true, 'model.chat_fallback', 'model.chat')]),
      c,
    );
    const t3 = onObservation(
      observed(w, (req) => [toolVerdict(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-12345678', status: 'placed' })]),
      c,
    );
    const end = onObservation(
      observed(t3, (req) => [modelVerdict(req.steps[0]!.step_id, { kind: 'final', content: 'Order O-12345678 is placed.', usage, model: 'gpt-big-2025' })]),
      c,
    );
    const o = outcome(end)!;
    assert.equal(o.status, 'completed', o.reason);
    assert.equal(o.model_cost, 0.0272, '0.013 + 0.0012 + 0.013 (gpt-big-2025 priced as gpt-big)');
    assert.deepEqual(parseModelState(request(t3)!.run).costs, { 'gpt-big': 0.013, 'gpt-small': 0.0012 }, 'the run state keeps the cost per model');
  });

  test("no price table: the outcome's model_cost is null", () => {
    const c = config({ prices: undefined });
    const t1 = onTask(task('Where is my order O-12345678?'), c);
    const end = onObservation(
      observed(t1, (req) => [modelVerdict(req.steps[0]!.step_id, { kind: 'final', content: 'Sorry, I cannot tell.', usage, model: 'gpt-big' })]),
      c,
    );
    // The skill has no grounding rule here: the final answer completes the run.
    assert.equal(outcome(end)!.model_cost, null);
  });
});

describe('the money budget', () => {
  test('a run ends budget_exhausted / money_budget BEFORE the turn that could cross it, and not before one that cannot', () => {
    // Turn 1's ceiling: its prompt estimate × 10 + 512 × 30 per million on gpt-big (dearer than the fallback).
    const probe = request(onTask(task('Where is my order O-12345678?'), config()))!;
    const prompt = parseModelState(probe.run).turn_tokens[0]!.prompt;
    const ceiling = (prompt * 10 + 512 * 30) / 1e6;
    // A budget under one turn's ceiling: no model turn is ever sent.
    const none = onTask(task('Where is my order O-12345678?'), config({ moneyBudget: ceiling * 0.9 }));
    const first = outcome(none)!;
    assert.deepEqual([first.status, first.reason_code, request(none)], ['budget_exhausted', 'money_budget', undefined]);
    assert.match(
      first.reason,
      new RegExp(
        `^model turn 1 could cost up to ${ceiling.toFixed(6).replace(/0+$/, '')} \\(about ${prompt} prompt tokens and 512 max_tokens at gpt-big's prices\\) on top of 0 spent: over the run's money budget of`,
      ),
    );
    assert.equal(first.model_cost, 0);

    // A budget for turn 1 and not turn 2: turn 1 runs (and costs 0.013), turn 2 is never sent.
    const c = config({ moneyBudget: ceiling + 0.005 });
    const t1 = onTask(task('Where is my order O-12345678?'), c);
    assert.ok(request(t1), 'turn 1 fits');
    const w = onObservation(
      observed(t1, (req) => [modelVerdict(req.steps[0]!.step_id, calls('gpt-big'))]),
      c,
    );
    assert.equal(request(w)!.steps[0]!.tool, 'orders.get', 'the tool calls run: they cost no money');
    const stopped = onObservation(
      observed(w, (req) => [toolVerdict(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-12345678', status: 'placed' })]),
      c,
    );
    const o = outcome(stopped)!;
    assert.deepEqual([o.status, o.reason_code], ['budget_exhausted', 'money_budget']);
    assert.match(o.reason, /^model turn 2 could cost up to [0-9.]+ .* on top of 0\.013 spent: over the run's money budget of/);
    assert.equal(o.model_cost, 0.013, 'what was spent, never more than the budget');
    assert.ok(o.model_cost! <= ceiling + 0.005);
  });

  test('the ceiling uses the prompt estimate scaled by what the server counted before', () => {
    assert.equal(promptUndercount({ turn_tokens: [] }), 1);
    assert.equal(promptUndercount({ turn_tokens: [{ turn: 1, system: 0, skill: 0, results: 0, history: 0, generation: 0, prompt: 100, reported: 150 }] }), 1.5);
  });
});

/**
 * The model loop against the rules real model servers enforce and the answers they really give.
 * Every request the loop builds is sent to the model SIMULATOR under a server profile (model-sim/
 * profiles.ts: openai, ollama, llamacpp, vllm), which refuses what that server refuses; every
 * answer quirk a real server or model produces is injected with a `[sim:kind@turn]` marker. The
 * stages' cores run as the processes run them (bench/lib/cores-over-http.ts), with Action's real
 * executor and the real demo tool server; no Kafka (the broker tests are beside this file).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { checkRequest } from '../../model-sim/profiles.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { onObservation, onTask } from '../../processors/thought/core.ts';
import { DEFAULT_SYSTEM_RULES } from '../../processors/thought/model/prompt.ts';
import { parseModelState, type ModelLoopConfig, type ReactSkill } from '../../processors/thought/model/state.ts';
import type { ModelAnswer } from '../../processors/model-wire.ts';
import type { Planner } from '../../processors/thought/planners/planner.ts';
import type { ObservationResult, Outcome, ThoughtRequest, Verdict } from '../../schemas/types.gen.ts';
import { loadWorld, task, thoughtConfig as coreConfig } from '../processors/fixtures.ts';
import { runTicket } from '../../bench/lib/cores-over-http.ts';

const STRICT = ['openai', 'ollama', 'llamacpp', 'vllm'] as const;
let tools: ToolServer;
const sims = new Map<string, ModelSim>();

before(async () => {
  tools = await startToolServer({ port: 0 });
});
after(async () => {
  await tools.close();
  for (const sim of sims.values()) await sim.close();
});

async function sim(profile: (typeof STRICT)[number], options: Record<string, unknown> = {}): Promise<ModelSim> {
  const key = `${profile}:${JSON.stringify(options)}`;
  let s = sims.get(key);
  if (!s) sims.set(key, (s = await startModelSim({ port: 0, profile, ...options })));
  s.resetStats();
  return s;
}

const env = (s: ModelSim, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  TAO_LLM_BASE_URL: `${s.url}/v1`,
  TAO_LLM_MODEL: 'served-model',
  TAO_DEMO_TOOL_ORIGIN: tools.url,
  TAO_LLM_TIMEOUT_MS: '5000',
  ...extra,
});
const refusals = (s: ModelSim) =>
  s
    .stats()
    .requests.filter((r) => r.refused !== null)
    .map((r) => `turn ${r.turn}: ${r.refused}`);

describe('requests every strict server accepts', () => {
  for (const profile of STRICT) {
    test(`${profile}: multi-turn runs, rejected answers and parallel calls are sent as ${profile} accepts them, never ending on the assistant's turn`, async () => {
      const s = await sim(profile);
      // Two answers in a row rejected (turns 1 and 2), then a run that makes parallel calls (crm.tier beside orders.latest).
      const rejected = await runTicket('Where is my order O-12345678? [sim:hallucinated_tool@1] [sim:bad_arguments@2]', env(s), 'wire-rej');
      const parallel = await runTicket('Where is my order? My e-mail is ada.lovelace@example.com', env(s), 'wire-par');
      assert.deepEqual(refusals(s), [], `${profile} refused requests`);
      assert.ok(
        s.stats().requests.every((r) => r.prefill === null),
        'no request ended on an assistant message',
      );
      assert.ok(!s.stats().requests.some((r) => r.quirks.includes('parallel_tool_calls_trimmed')), 'parallel calls were asked for');
      assert.equal(rejected.outcome.status, 'completed', rejected.outcome.reason);
      assert.ok(rejected.modelRequests.length >= 3, 'the run went on after two rejected answers');
      assert.equal(parallel.outcome.status, 'completed', parallel.outcome.reason);
      assert.ok(
        parallel.actions.some((a) => a.results.length > 1),
        'one turn made several calls, run as one wave',
      );
    });
  }
});

describe('requests Thought builds for the harder turns pass each profile (checked request by request)', () => {
  const world = loadWorld();
  const skill: ReactSkill = {
    name: 'order-status',
    version: 1,
    ref: 'order-status@1',
    prompt: 'Find the order.',
    allowedTools: ['orders.get', 'shipping.track'],
    maxModelTurns: 8,
    tokenBudget: 50_000,
    contextWindow: 8192,
    maxTokens: 512,
    maxReplans: 2,
  };
  const loop: ModelLoopConfig = {
    tool: 'model.chat',
    skill: (n) => (n === skill.name ? skill : undefined),
    toolSpec: (n) => {
      const spec = world.catalog.get(n)?.spec;
      return spec && { name: spec.name, description: spec.description, parameters: spec.parameters };
    },
    system: DEFAULT_SYSTEM_RULES,
  };
  const planner: Planner = {
    name: 'react',
    config: 'routes@1',
    plan: () => ({ kind: 'react', planner: 'react', skill: 'order-status', facts: { order_id: 'O-12345678' } }),
  };
  const config = coreConfig(world, { planner, model: loop, reflectAfter: 2 });
  const usage = { prompt_tokens: 300, completion_tokens: 30, total_tokens: 330 };
  const request = (d: ReturnType<typeof onTask>) => d.outputs.find((o) => o.topic === 'thoughtRequests')?.value as ThoughtRequest;
  const verdict = (stepId: string, tool: string, data: unknown, valid = true): Verdict => ({
    step_id: stepId,
    tool,
    valid,
    extracted_data_json: valid ? JSON.stringify(data) : null,
    confidence_score: valid ? 1 : 0,
    error_type: valid ? 'ok' : 'server_error',
    audit_trail: valid ? [] : [{ name: 'status_class', passed: false, evidence: 'status 500' }],
    status_code: valid ? 200 : 500,
    response_time_ms: 9,
    attempts: 1,
    fallback_from: null,
  });
  const observed = (d: ReturnType<typeof onTask>, vs: (r: ThoughtRequest) => Verdict[]): ObservationResult => ({
    thought_id: 't-1',
    iteration: request(d).iteration,
    run: request(d).run,
    verdicts: vs(request(d)),
    rules_version: null,
    classifier_model: null,
    dead_letter: null,
  });
  const model = (a: ModelAnswer) => (r: ThoughtRequest) => [verdict(r.steps[0]!.step_id, 'model.chat', a)];
  const bodyOf = (d: ReturnType<typeof onTask>) => ({ model: 'served-model', ...(JSON.parse(request(d).steps[0]!.input_json) as Record<string, unknown>) });

  test('after two failed tool waves the reflection, and the turn after it, keep one leading system message and tool results paired with their calls', () => {
    let d = onTask(task('Where is my order O-12345678?'), config);
    const bodies: Array<Record<string, unknown>> = [bodyOf(d)];
    const call = (turn: number): ModelAnswer => ({
      kind: 'tool_calls',
      content: null,
      calls: [{ id: `c000${turn}n001`, tool: 'orders.get', arguments: { order_id: 'O-12345678' } }],
      usage,
    });
    d = onObservation(observed(d, model(call(1))), config);
    d = onObservation(
      observed(d, (r) => [verdict(r.steps[0]!.step_id, 'orders.get', null, false)]),
      config,
    );
    bodies.push(bodyOf(d));
    d = onObservation(observed(d, model(call(2))), config);
    d = onObservation(
      observed(d, (r) => [verdict(r.steps[0]!.step_id, 'orders.get', null, false)]),
      config,
    );
    bodies.push(bodyOf(d)); // the reflection turn
    const reflection = {
      data_completeness: { verdict: 'MISSING', reason: 'no order' },
      logic_consistency: { verdict: 'PASS', reason: 'ok' },
      policy_compliance: { verdict: 'PASS', reason: 'ok' },
      uncertainty: { verdict: 'MISSING', reason: 'unknown' },
      action: 'retry_with_changed_input',
      reason: 'try again',
    } as const;
    d = onObservation(observed(d, model({ kind: 'reflection', reflection, usage })), config);
    bodies.push(bodyOf(d)); // the turn after: the reflection is in the prompt
    assert.match(JSON.stringify(bodies.at(-1)), /Reflections so far/);
    for (const body of bodies) {
      const messages = body.messages as Array<{ role: string; content: unknown }>;
      assert.deepEqual(messages.filter((m) => m.role === 'system').length, 1, 'one system message');
      assert.notEqual(messages.at(-1)!.role, 'assistant');
      assert.ok(
        messages.every((m) => typeof m.content === 'string'),
        'no null content',
      );
      for (const profile of STRICT)
        assert.equal(
          checkRequest(profile, body),
          null,
          `${profile} refuses turn ${parseModelState(request(d).run).turns}: ${JSON.stringify(checkRequest(profile, body))}`,
        );
    }
  });

  test('a grounded final answer that crosses the token budget is kept: the run completes with it', () => {
    const small = { ...skill, tokenBudget: 500 };
    const c = coreConfig(world, { planner, model: { ...loop, skill: (n) => (n === skill.name ? small : undefined) } });
    let d = onTask(task('Where is my order O-12345678?'), c);
    d = onObservation(
      observed(
        d,
        model({
          kind: 'tool_calls',
          content: null,
          calls: [{ id: 'c0001n001', tool: 'orders.get', arguments: { order_id: 'O-12345678' } }],
          usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
        }),
      ),
      c,
    );
    d = onObservation(
      observed(d, (r) => [verdict(r.steps[0]!.step_id, 'orders.get', { order_id: 'O-12345678', status: 'placed' })]),
      c,
    );
    d = onObservation(
      observed(d, model({ kind: 'final', content: 'Order O-12345678 is placed.', usage: { prompt_tokens: 500, completion_tokens: 20, total_tokens: 520 } })),
      c,
    );
    const outcome = d.outputs.find((o) => o.topic === 'outcomes')!.value as Outcome;
    assert.deepEqual([outcome.status, outcome.reason_code], ['completed', 'completed'], outcome.reason);
    assert.equal((JSON.parse(outcome.output_json!) as { answer: string }).answer, 'Order O-12345678 is placed.');
  });
});

describe('answers real servers and models give', () => {
  test('a cut-off answer (finish_reason length), a refusal and a content_filter never complete a run', async () => {
    const s = await sim('openai');
    const cut = await runTicket('Where is my order O-12345678? [sim:length*20]', env(s), 'wire-len');
    assert.notEqual(cut.outcome.status, 'completed', cut.outcome.reason);
    assert.ok(cut.observations.some((o) => o.verdicts.some((v) => v.audit_trail.some((c) => /cut off at the token limit/.test(c.evidence)))));
    for (const kind of ['refusal', 'content_filter']) {
      const r = await runTicket(`Where is my order O-12345678? [sim:${kind}@1]`, env(s), `wire-${kind}`);
      assert.deepEqual([r.outcome.status, r.outcome.reason_code], ['escalated', 'model_refused'], `${kind}: ${r.outcome.reason}`);
    }
  });

  test('prose instead of a call ("let me check") is not a final answer: the skill needs a verified result first', async () => {
    const s = await sim('openai');
    const r = await runTicket('Where is my order O-12345678? [sim:prose_instead*20]', env(s), 'wire-prose');
    assert.notEqual(r.outcome.status, 'completed', r.outcome.reason);
    assert.equal(r.outcome.reason_code, 'ungrounded', r.outcome.reason);
    const second = r.modelRequests[1]!.messages as Array<{ role: string; content: string }>;
    assert.match(second.at(-1)!.content, /needs a verified result of orders\.get/);
  });

  test('a tool call written as text is read as a call, verified and run, and the run completes on its result', async () => {
    const s = await sim('llamacpp');
    const r = await runTicket('Where is my order O-12345678? [sim:tool_call_as_text@1]', env(s), 'wire-text');
    assert.equal(r.outcome.status, 'completed', r.outcome.reason);
    const first = r.actions[1]!.results[0]!;
    assert.deepEqual([first.tool, first.status_code], ['orders.get', 200]);
    assert.deepEqual(refusals(s), []);
  });

  test('calls written in a JSON fence after a sentence, or as JSON inside a sentence, are read as calls: the run completes on their results', async () => {
    const s = await sim('llamacpp');
    for (const kind of ['tool_call_as_fenced_json', 'tool_call_in_prose']) {
      const r = await runTicket(`Where is my order O-12345678? [sim:${kind}@1]`, env(s), `wire-${kind}`);
      assert.equal(r.outcome.status, 'completed', `${kind}: ${r.outcome.reason}`);
      const first = r.actions[1]!.results[0]!;
      assert.deepEqual([first.tool, first.status_code], ['orders.get', 200], kind);
    }
    assert.deepEqual(refusals(s), []);
  });

  test('reasoning is kept apart: a <think> block or a reasoning field is recorded, never the answer', async () => {
    const s = await sim('vllm');
    for (const kind of ['think_block', 'reasoning_field']) {
      const r = await runTicket(`Where is my order O-12345678? [sim:${kind}]`, env(s), `wire-${kind}`);
      assert.equal(r.outcome.status, 'completed', r.outcome.reason);
      const answers = r.observations.flatMap((o) =>
        o.verdicts.filter((v) => v.tool === 'model.chat' && v.valid).map((v) => JSON.parse(v.extracted_data_json!) as ModelAnswer),
      );
      assert.ok(
        answers.some((a) => typeof a.reasoning === 'string' && a.reasoning.length > 0),
        `${kind}: reasoning recorded`,
      );
      assert.doesNotMatch((JSON.parse(r.outcome.output_json!) as { answer: string }).answer, /think|reason/i);
      assert.ok(
        r.modelRequests.every((b) => !JSON.stringify(b.messages).includes('<think>')),
        'reasoning is not sent back',
      );
    }
  });

  test("missing and duplicate tool-call ids get the runtime's own unique ids, which every server accepts back", async () => {
    for (const kind of ['missing_ids', 'duplicate_ids']) {
      const s = await sim('openai');
      const r = await runTicket(`Where is my order O-12345678? It never arrived. [sim:${kind}]`, env(s), `wire-${kind}`);
      assert.deepEqual(refusals(s), [], kind);
      assert.equal(r.outcome.status, 'completed', `${kind}: ${r.outcome.reason}`);
      const ids = r.modelRequests.flatMap((b) =>
        (b.messages as Array<{ tool_calls?: Array<{ id: string }> }>).flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []),
      );
      assert.ok(ids.length > 0 && ids.every((id) => /^[A-Za-z0-9]{9}$/.test(id)), `${kind}: ${ids.join(',')}`);
    }
  });

  test('arguments that are not JSON are rejected before any tool runs, and the model is asked again', async () => {
    const s = await sim('ollama');
    const r = await runTicket('Where is my order O-12345678? [sim:args_not_json@1]', env(s), 'wire-args');
    assert.equal(r.observations[0]!.verdicts[0]!.error_type, 'invalid_arguments');
    assert.equal(r.outcome.status, 'completed', r.outcome.reason);
    assert.deepEqual(refusals(s), []);
  });

  test('fenced JSON and <think> before a plan are accepted (plan-replan)', async () => {
    const s = await sim('openai');
    const r = await runTicket('Where is my order O-12345678? [sim:fenced_json@1]', env(s, { TAO_PLANNER: 'plan-replan' }), 'wire-fence');
    assert.equal(r.observations[0]!.verdicts[0]!.valid, true, JSON.stringify(r.observations[0]!.verdicts[0]!.audit_trail));
    assert.equal(r.outcome.status, 'completed', r.outcome.reason);
  });

  test('missing usage does not break the run (tokens count as zero)', async () => {
    const s = await sim('openai');
    const r = await runTicket('Where is my order O-12345678? [sim:no_usage]', env(s), 'wire-usage');
    assert.equal(r.outcome.status, 'completed', r.outcome.reason);
  });
});

describe('what real servers refuse', () => {
  test('a reasoning model gets max_completion_tokens and no temperature (TAO_LLM_PARAMS=reasoning), and answers', async () => {
    const s = await sim('openai');
    const r = await runTicket('Where is my order O-12345678?', env(s, { TAO_LLM_MODEL: 'o4-mini', TAO_LLM_PARAMS: 'reasoning' }), 'wire-o4');
    assert.deepEqual(refusals(s), []);
    assert.equal(r.outcome.status, 'completed', r.outcome.reason);
    assert.ok(r.modelRequests.every((b) => b.max_completion_tokens !== undefined && b.max_tokens === undefined && b.temperature === undefined));
  });

  for (const profile of ['openai', 'llamacpp'] as const) {
    test(`${profile}: a prompt over the server's context is sent again smaller, not unchanged`, async () => {
      const s = await sim(profile, { contextWindow: 1200 });
      const r = await runTicket('Where is my order O-12345678?', env(s), `wire-ctx-${profile}`);
      const sent = s.stats().requests;
      const refused = sent.findIndex((q) => q.refused === 'context_length');
      assert.ok(refused >= 0, 'a prompt was over the window');
      const size = (i: number) => JSON.stringify(r.modelRequests[i]).length;
      assert.equal(sent[refused + 1]!.turn, sent[refused]!.turn, 'the same turn is asked again');
      assert.ok(size(refused + 1) < size(refused), `the turn is sent again smaller: ${size(refused)} then ${size(refused + 1)} characters`);
      assert.notEqual(r.outcome.reason_code, 'model_unavailable', r.outcome.reason);
      assert.ok(r.outcome.status === 'completed' || r.outcome.reason_code === 'context_overflow', r.outcome.reason);
    });
  }

  test("another 4xx is not sent again unchanged: the run ends with the server's reason", async () => {
    const s = await sim('openai');
    const r = await runTicket('Where is my order O-12345678?', env(s, { TAO_LLM_MODEL: 'o4-mini' }), 'wire-4xx');
    assert.equal(s.stats().total, 1, 'one request, not re-sent');
    assert.deepEqual([r.outcome.status, r.outcome.reason_code], ['failed', 'model_request_refused']);
    assert.match(r.outcome.reason, /max_tokens/);
  });

  test("a 429 whose Retry-After is longer than the call's window is waited, and the answer after it is judged by the attempt that answered", async () => {
    const s = await sim('openai');
    // Window of the model call: 3 attempts x 1 s + 5 s of backoff = 8 s; the server asks for 9 s.
    s.setFault({ kind: 'rate_limit', retryAfterSeconds: 9, times: 1 });
    const r = await runTicket('Where is my order O-12345678?', env(s, { TAO_LLM_TIMEOUT_MS: '1000' }), 'wire-429');
    const first = r.actions[0]!.results[0]!;
    assert.deepEqual([first.status_code, first.attempts], [200, 2]);
    assert.ok(
      first.response_time_ms >= 9000 && first.attempt_time_ms! < 1500,
      `${first.response_time_ms} ms in all, ${first.attempt_time_ms} ms for the answer`,
    );
    assert.equal(r.observations[0]!.verdicts[0]!.valid, true, JSON.stringify(r.observations[0]!.verdicts[0]!.audit_trail));
    assert.equal(r.outcome.status, 'completed', r.outcome.reason);
  });
});

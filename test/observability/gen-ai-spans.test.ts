// test-needs: kafka
/**
 * GenAI spans made true: the three real stages, TAO_PLANNER=react, the model SIMULATOR (model-sim/)
 * as the model server, OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental, spans exported to
 * a local OTLP/HTTP receiver. Each model turn Action performed is a `chat sim-1` span whose GenAI
 * attributes are the recorded request's and answer's; each tool call the model asked for is an
 * `execute_tool` span whose call id is the `tool_call_id` the model was then shown; no prompt or
 * result leaves the process in a span.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { GEN_AI_SCHEMA_URL } from '../../runtime/tracing/gen-ai.ts';
import { spanContextOf } from '../../runtime/tracing/spans.ts';
import type { ActionResult } from '../../schemas/types.gen.ts';
import { runTasks, scan, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.ts';

let sim: ModelSim;
let receiver: OtlpReceiver;
let loop: RunningLoop;

before(async () => {
  [sim, receiver] = await Promise.all([startModelSim({ port: 0 }), startOtlpReceiver()]);
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '5000',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_SEMCONV_STABILITY_OPT_IN: 'http/dup,gen_ai_latest_experimental',
  });
});

after(async () => {
  await loop?.stop();
  await Promise.all([sim?.close(), receiver?.close()]);
});

test(
  'a ReAct run: each model turn is a "chat sim-1" span with the recorded request and answer, each call it asked for an execute_tool span',
  { timeout: 240000 },
  async () => {
    const ticket = 'Where is my order O-12345678? It was a birthday present.';
    const task = buildTask({ text: ticket, source: 'test', external_id: `${loop.cluster.namespace}-genai` });
    const id = task.thought_id;
    const outcome = (await runTasks(loop.cluster, [task], 150000)).get(id)!;
    assert.equal(outcome.status, 'completed', outcome.reason);

    const results = (await scan(loop.cluster, ['actionResults'], { until: (rs) => rs.some((r) => r.key === id) }))
      .filter((r) => r.key === id)
      .flatMap((r) => (r.value as unknown as ActionResult).results.map((step) => ({ step, writer: spanContextOf(r.headers.traceparent)!.spanId })));
    const turns = results.filter((r) => /^M\d+$/.test(r.step.step_id));
    const calls = results.filter((r) => /^M\d+_\d+$/.test(r.step.step_id));
    assert.ok(turns.length >= 2 && calls.length >= 1, `model turns (${turns.length}) and calls the model asked for (${calls.length})`);

    const mine = () => receiver.spans.filter((s) => s.attributes['tao.thought_id'] === id);
    await receiver.waitUntil(
      () =>
        turns.every((t) => mine().some((s) => s.name === 'chat sim-1' && s.attributes['tao.step'] === t.step.step_id)) &&
        calls.every((c) => mine().some((s) => s.name.startsWith('execute_tool ') && s.attributes['tao.step'] === c.step.step_id)),
      60000,
      'a chat span per model turn and an execute_tool span per call',
    );
    const spans = mine();

    for (const { step, writer } of turns) {
      const request = JSON.parse(step.input_json) as { max_tokens?: number; temperature?: number };
      const answer = JSON.parse(step.data_json!) as {
        id: string;
        model: string;
        choices: Array<{ finish_reason: string }>;
        usage: { prompt_tokens: number; completion_tokens: number };
      };
      const [span, ...more] = spans.filter((s) => s.name === 'chat sim-1' && s.attributes['tao.step'] === step.step_id);
      assert.equal(more.length, 0, `${step.step_id}: one attempt`);
      assert.equal(span!.kind, 3, 'SPAN_KIND_CLIENT');
      assert.equal(span!.service, 'tao-action');
      assert.equal(span!.parentSpanId, writer, `${step.step_id}: under the Action span that wrote its result`);
      assert.equal(span!.schemaUrl, GEN_AI_SCHEMA_URL);
      const genAi = Object.fromEntries(Object.entries(span!.attributes).filter(([k]) => k.startsWith('gen_ai.')));
      assert.deepEqual(
        genAi,
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'sim-1',
          'gen_ai.request.max_tokens': request.max_tokens,
          'gen_ai.request.temperature': request.temperature,
          'gen_ai.conversation.id': id,
          'gen_ai.response.id': answer.id,
          'gen_ai.response.model': answer.model,
          'gen_ai.response.finish_reasons': answer.choices.map((c) => c.finish_reason),
          'gen_ai.usage.input_tokens': answer.usage.prompt_tokens,
          'gen_ai.usage.output_tokens': answer.usage.completion_tokens,
        },
        `${step.step_id}: the pinned GenAI attributes, equal to the recorded request and answer`,
      );
      assert.equal(span!.attributes['server.port'], Number(new URL(sim.url).port));
    }

    // Each call's id is the one the model was shown its result under in the next turn's request.
    const shown = new Map<string, string>();
    for (const { step } of turns) {
      const request = JSON.parse(step.input_json) as { messages: Array<{ role: string; tool_call_id?: string; tool_calls?: Array<{ id: string }> }> };
      for (const m of request.messages) if (m.role === 'tool' && m.tool_call_id) shown.set(m.tool_call_id, step.step_id);
    }
    for (const { step, writer } of calls) {
      const [span, ...more] = spans.filter((s) => s.name.startsWith('execute_tool ') && s.attributes['tao.step'] === step.step_id);
      assert.equal(more.length, 0);
      assert.equal(span!.name, `execute_tool ${step.tool}`);
      assert.equal(span!.kind, 1, 'SPAN_KIND_INTERNAL');
      assert.equal(span!.parentSpanId, writer);
      assert.equal(span!.attributes['gen_ai.operation.name'], 'execute_tool');
      assert.equal(span!.attributes['gen_ai.tool.name'], step.tool);
      const callId = span!.attributes['gen_ai.tool.call.id'] as string;
      assert.ok(shown.has(callId), `${step.step_id}: its call id ${callId} is a tool_call_id a later turn showed the model (${[...shown.keys()]})`);
      const attempts = spans.filter((s) => s.name === `tool ${step.tool}` && s.attributes['tao.step'] === step.step_id);
      assert.ok(attempts.length >= 1 && attempts.every((a) => a.parentSpanId === span!.spanId), `${step.step_id}: its attempts sit under it`);
    }

    const exported = receiver.bodies.join('');
    for (const content of ['birthday present', 'O-12345678', 'Skill: order-status'])
      assert.ok(!exported.includes(content), `no prompt, argument or result in an exported span: ${content}`);
  },
);

// test-needs: kafka, chromium
/**
 * A 12-turn ReAct run whose raw history is over 3x the context window, end to end: the three stages
 * as processes, the demo tool server answering every order lookup with a long made-up history
 * (its `large_body` mode, plainly a simulator of a chatty API), and the scripted model SIMULATOR
 * (model-sim/, not a model) walking through eleven orders, one per turn, then answering. A test-only
 * skill sets a 4096-token window. Read back from the committed log: every recorded prompt fits the
 * window by the prompt builder's own estimate, and the facts the router extracted are in every one.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { estimateTokens, promptTokens } from '../../processors/thought/model/prompt.ts';
import type { ChatMessage, WireTool } from '../../processors/model-wire.ts';
import { replayCommand } from '../../replay/cli.ts';
import type { ActionResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { LoopRecord } from '../../client/watch.ts';
import { runTasks, scan, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { chromium, runCli, verifyWithoutModel } from '../replay/helpers.ts';

const WINDOW = 4096;
const ORDERS = Array.from({ length: 11 }, (_, i) => `O-202500${String(i + 1).padStart(2, '0')}`);
// The customer gives every id: a model may look up only ids the run was given (argument provenance).
const TICKET = `Please check my eleven orders, starting with O-20250001, and tell me where each one is: ${ORDERS.join(', ')}. My e-mail is ada@example.com.`;
/** What the intent router extracts from the ticket (`tao classify`): the run's protected facts. */
const FACTS = { email: 'ada@example.com', order_id: 'O-20250001' };

const SKILL_MD = `---
name: order-history
description: Goes through a customer's orders one by one and reports where each is. Use when a ticket asks about many orders at once.
allowed-tools: orders.get
metadata:
  version: "1"
  intents: order_status
  planner: react
  context-window: "${WINDOW}"
  max-model-turns: "12"
  token-budget: "200000"
---
# Order history

Look up every order the customer has, one per turn, with \`orders.get\`; then answer with one line per
order: its id and status.
`;

/** Turn n (1..11) looks up the n-th order; turn 12 answers. A simulator's script, not a model. */
const SCENARIO = {
  description: 'test-only: eleven lookups, one per turn, then a final answer',
  rules: [
    ...ORDERS.map((order, i) => ({
      name: `look up order ${i + 1}`,
      when: { turn: i + 1 },
      answer: { tool_calls: [{ tool: 'orders.get', arguments: { order_id: order } }] },
    })),
    { name: 'final answer', when: { turn: 12 }, answer: { content: `I checked your eleven orders, ${ORDERS[0]} to ${ORDERS.at(-1)}.` } },
  ],
};

let dir: string;
let sim: ModelSim;
let loop: RunningLoop;
let outcome: Outcome;
let id: string;
let records: LoopRecord[];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tao-window-'));
  mkdirSync(join(dir, 'skills', 'order-history'), { recursive: true });
  writeFileSync(join(dir, 'skills', 'order-history', 'SKILL.md'), SKILL_MD);
  mkdirSync(join(dir, 'scenarios'));
  writeFileSync(join(dir, 'scenarios', 'order-history.json'), JSON.stringify(SCENARIO));
  sim = await startModelSim({ port: 0, scenariosDir: join(dir, 'scenarios') });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_SKILLS_DIR: join(dir, 'skills'),
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '5000',
  });
  loop.tools.setFault({ route: 'orders.get', mode: 'large_body', bytes: 6000 });
  const task = buildTask({ text: TICKET, source: 'test', external_id: `${loop.cluster.namespace}-window` });
  id = task.thought_id;
  outcome = (await runTasks(loop.cluster, [task], 120000)).get(id)!;
  // 12 model waves + 11 tool waves, each one request and one result record (read_committed).
  const mine = (rs: LoopRecord[], topic: string) => rs.filter((r) => r.key === id && r.topic === topic).length;
  records = await scan(loop.cluster, ['thoughtRequests', 'actionResults'], {
    until: (rs) => mine(rs, 'thoughtRequests') >= 23 && mine(rs, 'actionResults') >= 23,
  });
});

after(async () => {
  await loop?.stop();
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('12 model turns over a raw history of 3x the window: every recorded prompt fits, and the facts are in every prompt', () => {
  assert.deepEqual([outcome.status, outcome.planner_kind], ['completed', 'react'], outcome.reason);
  const output = JSON.parse(outcome.output_json!) as { turns: number; skill: string; answer: string };
  assert.deepEqual([output.turns, output.skill], [12, 'order-history@1']);

  const steps = records.filter((r) => r.key === id && r.topic === 'thoughtRequests').flatMap((r) => (r.value as unknown as ThoughtRequest).steps);
  const turns = steps.filter((s) => s.tool === 'model.chat');
  assert.deepEqual(
    turns.map((s) => s.step_id),
    Array.from({ length: 12 }, (_, i) => `M${i + 1}`),
    'twelve model turns, each once',
  );

  const results = records.filter((r) => r.key === id && r.topic === 'actionResults').flatMap((r) => (r.value as unknown as ActionResult).results);
  const lookups = results.filter((r) => r.tool === 'orders.get');
  assert.deepEqual(
    lookups.map((r) => (JSON.parse(r.response_raw!) as { order_id: string }).order_id),
    ORDERS,
    'each order looked up once, in turn order',
  );
  const rawTokens = lookups.reduce((n, r) => n + estimateTokens(r.response_raw!), 0);
  assert.ok(rawTokens >= 3 * WINDOW, `the raw observations are ${rawTokens} tokens; the test needs at least ${3 * WINDOW}`);

  let cut = 0;
  for (const step of turns) {
    const request = JSON.parse(step.input_json) as { messages: ChatMessage[]; tools: WireTool[]; max_tokens: number };
    const used = promptTokens(request.messages, request.tools);
    assert.ok(used + request.max_tokens <= WINDOW, `${step.step_id}: ${used} prompt tokens + ${request.max_tokens} max_tokens > ${WINDOW}`);
    const system = request.messages[0]!.content!;
    assert.match(system, /^Skill: order-history@1\n/);
    for (const [k, v] of Object.entries(FACTS)) assert.ok(system.includes(`- ${k}: ${v}`), `${step.step_id}: the fact ${k} is missing from the prompt`);
    assert.deepEqual(request.messages[1], { role: 'user', content: TICKET }, `${step.step_id}: the task text is whole`);
    if (request.messages.some((m) => m.role === 'tool' && /…\[cut \d+ chars\]$/.test(m.content))) cut++;
  }
  assert.ok(cut >= 9, `long outputs were cut to fit (${cut} prompts with a cut marker)`);
});

test('replay --verify rebuilds all twelve prompts from the log with the model server stopped: no drift', async () => {
  await loop.fleet.stop();
  await sim.close();
  const { run, drift } = await verifyWithoutModel(id, loop.cluster.env);
  assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(0, 2000)}`);
  assert.equal(drift, false);
});

test('the HTML report, opened in Chromium, shows each model turn collapsed: its request, answer, tokens and what Thought made of it', async () => {
  const file = join(dir, 'report.html');
  const { code, stderr } = await runCli(replayCommand, [id, '--format', 'html', '--out', file], { ...loop.cluster.env, TAO_LLM_BASE_URL: '' });
  assert.equal(code, 0, stderr);
  assert.doesNotMatch(readFileSync(file, 'utf8'), /(src|href)=["']?https?:/, 'no external assets');
  const dom = await chromium(file);
  const turns = dom.match(/<details class="model-turn"[^>]*>[\s\S]*?<\/details>/g) ?? [];
  assert.equal(turns.length, 12, 'one view per model turn');
  assert.ok(
    turns.every((t) => !/^<details class="model-turn"[^>]*\bopen\b/.test(t)),
    'collapsed by default',
  );
  assert.match(turns[0]!, /<summary>model turn · 2 messages · 2 tools · sim-1 · \d+ tokens<\/summary>/);
  assert.match(turns[0]!, /<th>max_tokens<\/th><td><code>409<\/code>/);
  assert.match(turns[0]!, /<div class="msg role-system"><span class="role">system<\/span><pre>Skill: order-history@1/);
  assert.match(
    turns[0]!,
    /The next wave: 1 tool call\(s\)\.<\/p><ul><li><strong>M1_1<\/strong> <code>orders\.get<\/code> <code>\{"order_id":"O-20250001"\}<\/code>/,
  );
  assert.match(turns[11]!, /The final answer:<\/p><pre class="final">I checked your eleven orders/);
  assert.match(turns[11]!, /tao-model-sim/, 'the raw answer');
});

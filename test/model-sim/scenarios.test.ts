import assert from 'node:assert/strict';
import { test } from 'node:test';

import { buildRequest } from '../../processors/action/invoke.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog } from '../../tools/catalog.ts';

/** The catalog tools each demo skill offers (the tools of its flow, docs/DEMO-DOMAIN.md). */
const SKILL_TOOLS: Record<string, string[]> = {
  'order-status': ['orders.get', 'shipping.track'],
  'refund-request': ['orders.get', 'refunds.create'],
  'invoice-copy': ['billing.get_invoice', 'billing.send_invoice_copy'],
  'account-access': ['crm.find_customer', 'identity.password_reset'],
  'outage-report': ['status.service', 'incidents.latest'],
  'expense-claim-status': ['expenses.get_claim'],
};

interface ToolCall {
  id: string;
  function: { name: string; arguments: string };
}
interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: ToolCall[];
}

interface Transcript {
  /** Model turns taken. */
  turns: number;
  /** Catalog tools called, per turn. */
  waves: string[][];
  final: string;
}

/**
 * Drives one conversation as the loop would: send, perform each tool call
 * against the real demo tool server (arguments checked against the catalog's
 * parameter schema first), append the results as `tool` messages, send again.
 */
async function converse(sim: ModelSim, catalog: ToolCatalog, skill: string, text: string): Promise<Transcript> {
  const offered = SKILL_TOOLS[skill] ?? [];
  const tools = offered.map((name) => {
    const tool = catalog.get(name);
    assert.ok(tool, name);
    return { type: 'function', function: { name: name.replaceAll('.', '__'), description: tool.spec.description, parameters: tool.spec.parameters } };
  });
  const messages: unknown[] = [
    { role: 'system', content: `Skill: ${skill}@1\nYou are a customer-service agent.` },
    { role: 'user', content: text },
  ];
  const waves: string[][] = [];
  for (let turn = 1; turn <= 6; turn += 1) {
    const res = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages, tools, temperature: 0 }),
    });
    assert.equal(res.status, 200);
    const message = ((await res.json()) as { choices: Array<{ message: AssistantMessage }> }).choices[0]?.message;
    assert.ok(message);
    messages.push(message);
    if (message.tool_calls === undefined) return { turns: turn, waves, final: message.content ?? '' };
    const wave: string[] = [];
    for (const call of message.tool_calls) {
      const name = call.function.name.replaceAll('__', '.');
      assert.ok(offered.includes(name), `${skill} calls ${name}, which it does not offer`);
      const tool = catalog.get(name);
      assert.ok(tool);
      const input = JSON.parse(call.function.arguments) as Record<string, unknown>;
      assert.ok(tool.validateInput(input), `${name} arguments ${call.function.arguments} break its parameter schema`);
      const { url, body } = buildRequest(tool, input);
      const answer = await fetch(url, {
        method: tool.spec.method,
        headers: body === null ? {} : { 'content-type': 'application/json', 'idempotency-key': `${skill}:${turn}:${call.id}` },
        body: body ?? undefined,
      });
      const got = await answer.text();
      messages.push({ role: 'tool', tool_call_id: call.id, content: answer.ok ? got : JSON.stringify({ error: { status: answer.status, body: got } }) });
      wave.push(name);
    }
    waves.push(wave);
  }
  assert.fail(`${skill}: no final answer within 6 turns`);
}

async function withServers(fn: (sim: ModelSim, catalog: ToolCatalog) => Promise<void>): Promise<void> {
  const tools: ToolServer = await startToolServer({ port: 0 });
  const sim = await startModelSim({ port: 0 });
  try {
    await fn(sim, ToolCatalog.load(DEFAULT_CATALOG_DIR, { TAO_DEMO_TOOL_ORIGIN: tools.url }));
  } finally {
    await sim.close();
    await tools.close();
  }
}

/** The demo tickets (docs/DEMO-DOMAIN.md) and what the scripted conversation ends with on the demo data. */
const TICKETS: Array<{ skill: string; text: string; waves: string[][]; final: RegExp }> = [
  {
    skill: 'order-status',
    text: 'Where is my order O-12345678?',
    waves: [['orders.get'], ['shipping.track']],
    final: /^Order O-12345678 is delivered\. The shipment with SF is delivered, ETA \d{4}-\d\d-\d\dT[\d:]+Z\.$/,
  },
  { skill: 'order-status', text: '我的订单 O-12345678 到哪了', waves: [['orders.get'], ['shipping.track']], final: /^Order O-12345678 is delivered\./ },
  { skill: 'order-status', text: 'Has O-20250003 shipped?', waves: [['orders.get']], final: /O-20250003 has been placed but has not shipped yet/ },
  {
    skill: 'refund-request',
    text: 'I want a refund for order O-12345678',
    waves: [['orders.get'], ['refunds.create']],
    final: /^Refund R-74947434 of 38312 cents for order O-12345678 is pending\.$/,
  },
  { skill: 'refund-request', text: 'Please refund O-20250003', waves: [['orders.get']], final: /only been placed, not shipped, so it cannot be refunded/ },
  {
    skill: 'invoice-copy',
    text: 'Please send me a copy of invoice INV-2024-0042',
    waves: [['billing.get_invoice'], ['billing.send_invoice_copy']],
    final: /^A copy of invoice INV-2024-0042 \(\d+ cents, issued 2024-[^)]+\) was sent by email to customer C-\d{6}\.$/,
  },
  { skill: 'invoice-copy', text: 'Please send me a copy of invoice INV-2024-9999', waves: [['billing.get_invoice']], final: /could not find that invoice/ },
  {
    skill: 'account-access',
    text: "I can't log in, my email is li.lei@example.com",
    waves: [['crm.find_customer'], ['identity.password_reset']],
    final: /customer C-705429 \(reset PWR-28335885\); it expires at 2026-01-01T01:00:00\+08:00\.$/,
  },
  {
    skill: 'outage-report',
    text: 'Is payments down?',
    waves: [['status.service'], ['incidents.latest']],
    final: /^payments is in state outage .*Incident INC-227729 "Card payments failing at the payment gateway" is investigating\.$/,
  },
  { skill: 'outage-report', text: 'Is checkout broken?', waves: [['status.service']], final: /^checkout is operational/ },
  { skill: 'outage-report', text: 'Is Payments down?', waves: [], final: /Which service is affected/ },
  {
    skill: 'expense-claim-status',
    text: "What's the status of expense claim EC-123456?",
    waves: [['expenses.get_claim']],
    final: /^Expense claim EC-123456 \(64620 cents\) is approved, last updated /,
  },
];

test('each demo skill scenario runs its tickets against the real demo tool server with arguments that satisfy the catalog', async () => {
  await withServers(async (sim, catalog) => {
    for (const t of TICKETS) {
      const got = await converse(sim, catalog, t.skill, t.text);
      assert.deepEqual(got.waves, t.waves, `${t.skill}: ${t.text}`);
      assert.equal(got.turns, t.waves.length + 1);
      assert.match(got.final, t.final, `${t.skill}: ${t.text}`);
    }
    const stats = sim.stats();
    assert.equal(stats.byOutcome['no_rule'], undefined, 'every turn was answered by a rule');
    assert.equal(stats.bySkill['default'], undefined);
  });
});

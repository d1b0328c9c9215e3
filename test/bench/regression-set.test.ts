/**
 * The regression set of `npm run models:eval-loop` (eval/regression-tickets.json) cannot drift
 * from the demo tool server: every ticket's calls are made through the catalog and Action's executor
 * against a real tool server, each answers 2xx, and every expected fact is the value the server
 * returned; each identity argument comes from the ticket or an earlier call's result (as the loop's
 * provenance rule demands of a model). The set covers every intent, both languages and the tickets
 * that must not complete, and an answer that states its facts scores solved. No model, no broker.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { identityParameters, makeCalls, responseEnums } from '../../eval/regression-calls.ts';
import { loadRegressionSet, scoreRun, writtenFact, type Category, type RegressionTicket } from '../../eval/regression-set.ts';
import { loadSkills, DEFAULT_SKILLS_DIR } from '../../processors/thought/skills.ts';
import { loadCatalog } from '../../processors/wiring/index.ts';
import { createContractAjv } from '../../tools/catalog.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';

const tickets = loadRegressionSet();
let server: ToolServer;
before(async () => {
  server = await startToolServer({ port: 0 });
});
after(async () => {
  await server.close();
});

const CJK = /[\u4e00-\u9fff]/;
const IDS = /\b(?:O-\d{8}|EC-\d{6}|INV-\d{4}-\d{4})\b|@/;

test('the set has at least 40 tickets with unique ids, about half in English and half in Chinese, each written in its language', () => {
  assert.ok(tickets.length >= 40, `${tickets.length} tickets`);
  assert.equal(new Set(tickets.map((t) => t.id)).size, tickets.length, 'ticket ids are unique');
  const zh = tickets.filter((t) => t.language === 'zh').length;
  assert.ok(zh >= tickets.length * 0.4 && zh <= tickets.length * 0.6, `${zh} of ${tickets.length} in Chinese`);
  for (const t of tickets) assert.equal(CJK.test(t.text), t.language === 'zh', `${t.id} is written in ${t.language}`);
  assert.equal(new Set(tickets.map((t) => t.text)).size, tickets.length, 'no ticket text is used twice');
});

test('every intent, both languages, off-domain tickets and tickets without the id they need (order, claim, invoice) are covered', () => {
  const categories: Category[] = ['order', 'claim', 'service', 'invoice', 'account', 'refund', 'off_domain', 'missing_id'];
  for (const c of categories)
    for (const lang of ['en', 'zh'])
      assert.ok(
        tickets.some((t) => t.category === c && t.language === lang),
        `a ${c} ticket in ${lang}`,
      );
  for (const intent of ['order_status', 'expense_claim_status', 'invoice_copy'])
    for (const lang of ['en', 'zh'])
      assert.ok(
        tickets.some((t) => t.category === 'missing_id' && t.intent === intent && t.language === lang),
        `a ${intent} ticket without its id in ${lang}`,
      );
});

test('how each ticket must end follows from what it is: off-domain escalated, without an id awaiting input, the rest completed with facts', () => {
  const skills = loadSkills(DEFAULT_SKILLS_DIR, loadCatalog(process.env, createContractAjv(), 'contracts'));
  for (const t of tickets) {
    const want: RegressionTicket['expect'] = t.category === 'off_domain' ? 'escalated' : t.category === 'missing_id' ? 'awaiting_input' : 'completed';
    assert.equal(t.expect, want, t.id);
    if (t.expect !== 'completed') {
      assert.deepEqual([t.calls, t.facts], [[], []], `${t.id} needs no call`);
      if (t.category === 'missing_id') assert.ok(!IDS.test(t.text), `${t.id} carries no id or e-mail address`);
      continue;
    }
    assert.ok(t.calls.length > 0 && t.facts.length > 0, `${t.id} has calls and facts`);
    const skill = skills.forIntent(t.intent);
    assert.ok(skill, `${t.id}: a skill serves ${t.intent}`);
    for (const c of t.calls) assert.ok(skill.allowedTools.includes(c.tool), `${t.id}: ${skill.name} may call ${c.tool}`);
    for (const f of t.facts)
      assert.ok(
        t.calls.some((c) => c.tool === f.tool),
        `${t.id}: the fact ${f.tool}.${f.field} comes from a call of the ticket`,
      );
  }
});

test("every ticket's calls answer 2xx on the demo tool server, every expected fact is what it returned, and identities come from the ticket or an earlier result", async () => {
  const identities = identityParameters(process.env);
  for (const t of tickets.filter((x) => x.expect === 'completed')) {
    const answers = await makeCalls(t, server.url, process.env);
    const seen: string[] = [t.text.toLowerCase()];
    for (const a of answers) {
      assert.ok(a.status !== null && a.status >= 200 && a.status < 300, `${t.id}: ${a.tool} answered ${a.status} (${a.error})`);
      for (const p of identities(a.tool)) {
        const v = String(a.args[p]).toLowerCase();
        assert.ok(
          seen.some((s) => s.includes(v)),
          `${t.id}: ${a.tool}'s ${p} ${v} is in the ticket or an earlier result`,
        );
      }
      seen.push(JSON.stringify(a.data).toLowerCase());
    }
    for (const f of t.facts) {
      const a = answers.find((x) => x.tool === f.tool)!;
      assert.deepEqual(a.data?.[f.field], f.value, `${t.id}: ${f.tool}.${f.field}`);
    }
  }
});

test('an answer stating each expected fact scores solved and the checker finds nothing unsupported in it; one without a fact does not', async () => {
  const enums = responseEnums(process.env);
  for (const t of tickets.filter((x) => x.expect === 'completed')) {
    const answers = await makeCalls(t, server.url, process.env);
    const said = t.facts.map(writtenFact).join(', ');
    const run = {
      status: 'completed',
      reasonCode: 'completed',
      said,
      verifiedTools: new Set(answers.map((a) => a.tool)),
      calledTools: new Set(answers.map((a) => a.tool)),
      results: answers.map((a) => ({ tool: a.tool, data: a.data })),
      given: [t.text],
    };
    const score = scoreRun(t, run, enums);
    assert.equal(score.verdict, 'solved', `${t.id}: "${said}": ${score.why}`);
    const short = scoreRun(t, { ...run, said: t.facts.slice(1).map(writtenFact).join(', ') }, enums);
    assert.notEqual(short.verdict, 'solved', `${t.id} without its first fact`);
  }
});

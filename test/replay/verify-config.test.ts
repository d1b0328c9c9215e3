/**
 * `replay --verify` re-decides a run with the planner and configuration versions the run recorded,
 * not the shell's TAO_PLANNER; a configuration the run was made with that today's lacks is reported
 * as configuration drift, apart from code drift. Runs recorded in-process by the real cores (no broker).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DEFAULT_FLOWS_DIR } from '../../processors/thought/planners/flows.ts';
import { observationConfig, thoughtConfig } from '../../processors/wiring/index.ts';
import { DEFAULT_RULES_FILE } from '../../processors/observation/rules.ts';
import type { RunLog } from '../../replay/log.ts';
import { renderVerify } from '../../replay/render-reports.ts';
import { verifyRun } from '../../replay/verify.ts';
import { recordedPlanner, verifyConfigsForRun } from '../../replay/verify-config.ts';
import type { ObservationResult, ThoughtRequest } from '../../schemas/types.gen.ts';
import { EMAIL, LLM_ANSWER_RECORD, recordRun, retiredLlmPlanner } from './record-run.ts';

const dirs: string[] = [];

after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The router's recorded answer for an order-status ticket that gives an e-mail address. */
const ROUTE = JSON.stringify({
  intent: 'order_status',
  confidence: 0.982,
  slots: { email: EMAIL },
  model: 'intent-router@000000000000',
  candidate: 'order_status',
});

/** A flows folder like flows/ where order-status is at version 2 only, with a routing table (version 2) pointing at it. */
function flowsWithOrderStatusV2(): { dir: string; routes: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tao-flows-'));
  dirs.push(dir);
  for (const f of readdirSync(DEFAULT_FLOWS_DIR).filter((f) => f.endsWith('.json') && f !== 'routes.json')) {
    const flow = JSON.parse(readFileSync(join(DEFAULT_FLOWS_DIR, f), 'utf8')) as { id: string; version: number };
    if (flow.id === 'order-status') writeFileSync(join(dir, 'order-status.v2.json'), JSON.stringify({ ...flow, version: 2 }));
    else writeFileSync(join(dir, f), JSON.stringify(flow));
  }
  const table = JSON.parse(readFileSync(join(DEFAULT_FLOWS_DIR, 'routes.json'), 'utf8')) as { version: number; intents: Record<string, string[]> };
  const routes = join(dir, 'routes.json');
  writeFileSync(
    routes,
    JSON.stringify({
      version: 2,
      intents: { ...table.intents, order_status: table.intents.order_status!.map((k) => (k === 'order-status@1' ? 'order-status@2' : k)) },
    }),
  );
  return { dir, routes };
}

/** What `tao replay --verify` does (replay/cli.ts), without the classifier the recorded runs ran without. */
async function verify(log: RunLog, env: NodeJS.ProcessEnv) {
  return verifyRun(log, await verifyConfigsForRun(log, { ...env, TAO_SEMANTIC_CHECK: 'off' }));
}

test('a run made with the router planner records it, and verifies without drift from a shell without TAO_PLANNER or with another one', async () => {
  const router = await thoughtConfig({ TAO_PLANNER: 'router' });
  const log = await recordRun(router, await observationConfig({ TAO_SEMANTIC_CHECK: 'off' }), ROUTE);
  assert.deepEqual(recordedPlanner(log), { kind: 'router', config: 'routes@1', flows: ['order-status@1'] });
  assert.equal(
    log.records
      .filter((r) => r.topic === 'outcomes')
      .map((r) => r.value!.status)
      .join(),
    'completed',
  );

  for (const env of [{}, { TAO_PLANNER: 'graph' }, { TAO_PLANNER: 'graph', TAO_FLOW: 'refund-request@1' }]) {
    const report = await verify(log, env);
    assert.equal(report.drift, false, `${JSON.stringify(env)}: ${JSON.stringify([report.configuration_drift, report.first_divergence], null, 2)}`);
    assert.deepEqual(report.configuration_drift, []);
    assert.match(renderVerify(report), /NO DRIFT/);
  }
});

test('a flow version the run was made with that today has not is configuration drift, not code drift', async () => {
  const { dir, routes } = flowsWithOrderStatusV2();

  // Router: the routing table went from version 1 to 2, and order-status@1 is gone.
  const routed = await recordRun(await thoughtConfig({ TAO_PLANNER: 'router' }), await observationConfig({ TAO_SEMANTIC_CHECK: 'off' }), ROUTE);
  const r = await verify(routed, { TAO_FLOWS_DIR: dir, TAO_ROUTES: routes });
  assert.equal(r.drift, true);
  assert.equal(r.code_drift, false);
  assert.deepEqual(
    r.configuration_drift.map((c) => [c.setting, c.recorded, c.today]),
    [
      ['planner_config', 'routes@1', 'routes@2'],
      ['flow', 'order-status@1', 'order-status@2'],
    ],
  );
  const text = renderVerify(r);
  assert.match(text, /CONFIGURATION DRIFT/);
  assert.match(text, /the run followed flow order-status@1; today's flows have order-status@2/);
  assert.doesNotMatch(text, /CODE DRIFT/);

  // Graph on order-status@1, verified where only order-status@2 exists: re-decided on @2, reported as configuration drift.
  const graphed = await recordRun(
    await thoughtConfig({ TAO_PLANNER: 'graph', TAO_FLOW: 'order-status@1' }),
    await observationConfig({ TAO_SEMANTIC_CHECK: 'off' }),
    null,
  );
  assert.deepEqual(recordedPlanner(graphed), { kind: 'graph', config: 'order-status@1', flows: ['order-status@1'] });
  const g = await verify(graphed, { TAO_FLOWS_DIR: dir, TAO_ROUTES: routes });
  assert.deepEqual(
    g.configuration_drift.map((c) => [c.setting, c.recorded, c.today]),
    [['flow', 'order-status@1', 'order-status@2']],
  );
  assert.equal(g.code_drift, false);
  assert.ok(
    g.first_divergence?.diff.some((f) => f.path === 'run.flow_version' && f.recorded === 1 && f.today === 2),
    'the decisions differ by the flow version',
  );

  // The same configuration deciding differently is code drift.
  const mutated = structuredClone(graphed);
  const wave2 = mutated.records.find((x) => x.topic === 'thoughtRequests' && x.value!.iteration === 2)!;
  (wave2.value as unknown as ThoughtRequest).steps[0]!.input_json = '{"customer_id":"C-999999"}';
  const c = await verify(mutated, {});
  assert.deepEqual([c.drift, c.code_drift, c.configuration_drift.length], [true, true, 0]);
  assert.match(renderVerify(c), /CODE DRIFT \(DETERMINISM_VIOLATION\) in thought/);
});

/** A copy of rules/observation.json with `edit` applied, as a file for TAO_OBSERVATION_RULES. */
function rulesFile(edit: (rules: Record<string, unknown>) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'tao-rules-'));
  dirs.push(dir);
  const rules = JSON.parse(readFileSync(DEFAULT_RULES_FILE, 'utf8')) as Record<string, unknown>;
  edit(rules);
  writeFileSync(join(dir, 'observation.json'), JSON.stringify(rules));
  return join(dir, 'observation.json');
}

test("Observation's verdicts name the rules that judged them; other rules today are configuration drift, not code drift, and verdicts recorded before the field verify", async () => {
  const observation = await observationConfig({ TAO_SEMANTIC_CHECK: 'off' });
  const log = await recordRun(await thoughtConfig({ TAO_PLANNER: 'router' }), observation, ROUTE);
  const recorded = log.records.filter((r) => r.topic === 'observationResults').map((r) => (r.value as unknown as ObservationResult).rules_version);
  assert.match(observation.rules.fingerprint, /^1#[0-9a-f]{12}$/);
  assert.deepEqual(new Set(recorded), new Set([observation.rules.fingerprint]), 'every verdict record names the rules');
  const reordered = rulesFile((r) => {
    for (const [k, v] of Object.entries(r).reverse()) {
      delete r[k];
      r[k] = v;
    }
  });
  const reorderedRules = (await observationConfig({ TAO_OBSERVATION_RULES: reordered, TAO_SEMANTIC_CHECK: 'off' })).rules;
  assert.ok(Object.keys(reorderedRules)[0] !== 'version', 'the keys are in another order');
  assert.equal(reorderedRules.fingerprint, observation.rules.fingerprint, 'the same rules with their keys in another order are the same version');

  // A looser latency limit changes every verdict's latency evidence: the decisions differ, with the rules named as the reason.
  const looser = rulesFile((r) => (r.latencyFactor = 2));
  const changed = await verify(log, { TAO_OBSERVATION_RULES: looser });
  const today = (await observationConfig({ TAO_OBSERVATION_RULES: looser, TAO_SEMANTIC_CHECK: 'off' })).rules.fingerprint;
  assert.notEqual(today, observation.rules.fingerprint, 'an edit without a new version number is another version');
  assert.deepEqual(
    changed.configuration_drift.map((c) => [c.setting, c.recorded, c.today]),
    [['observation_rules', observation.rules.fingerprint, today]],
  );
  assert.deepEqual([changed.drift, changed.code_drift, changed.first_divergence?.stage], [true, false, 'observation']);
  assert.match(renderVerify(changed), /DECISIONS DIFFER \(with the configuration drift above, not necessarily a code change\)/);
  assert.doesNotMatch(renderVerify(changed), /CODE DRIFT/);

  // A rule for a value no step returned: other rules, the same decisions.
  const unused = rulesFile(
    (r) => ((r.tools as Record<string, unknown>)['crm.tier'] = { forbidden: [{ path: '/tier', values: ['revoked'], reason: 'a revoked tier is no tier' }] }),
  );
  const same = await verify(log, { TAO_OBSERVATION_RULES: unused });
  assert.deepEqual([same.drift, same.code_drift, same.first_divergence, same.configuration_drift.length], [true, false, null, 1]);
  assert.match(renderVerify(same), /today decides every recorded input as recorded, despite the configuration drift/);

  // Verdict records written before rules_version existed: nothing to compare the rules with, and the verdicts match.
  const old = structuredClone(log);
  for (const r of old.records)
    if (r.topic === 'observationResults') Object.assign(r.value as unknown as ObservationResult, { rules_version: null, classifier_model: null });
  const before = await verify(old, {});
  assert.deepEqual([before.drift, before.configuration_drift.length], [false, 0], JSON.stringify(before.first_divergence?.diff));
});

test('a run judged without the classifier, verified where Observation has one, is configuration drift (classifier_model), not code drift', async () => {
  const log = await recordRun(await thoughtConfig({ TAO_PLANNER: 'router' }), await observationConfig({ TAO_SEMANTIC_CHECK: 'off' }), ROUTE);
  assert.deepEqual(
    new Set(log.records.filter((r) => r.topic === 'observationResults').map((r) => (r.value as unknown as ObservationResult).classifier_model)),
    new Set([null]),
  );
  const observation = await observationConfig({});
  assert.match(observation.classifier!.model, /^error-classifier@[0-9a-f]{12}$/);
  const run = await verifyConfigsForRun(log, {});
  const report = await verifyRun(log, run);
  assert.deepEqual(
    report.configuration_drift.map((c) => [c.setting, c.recorded, c.today]),
    [['classifier_model', 'none (TAO_SEMANTIC_CHECK=off)', observation.classifier!.model]],
  );
  assert.deepEqual([report.drift, report.code_drift], [true, false]);
  assert.ok(
    report.first_divergence?.diff.some((f) => f.path.startsWith('verdicts[0].audit_trail')),
    "the semantic check is in today's audit trail",
  );
});

test('a run of the retired llm planner verifies from its recorded plans, with a configuration drift row naming the retired planner', async () => {
  const graph = await thoughtConfig({ TAO_PLANNER: 'graph', TAO_FLOW: 'order-status@1' });
  const log = await recordRun(
    { ...graph, planner: retiredLlmPlanner(graph.planner) },
    await observationConfig({ TAO_SEMANTIC_CHECK: 'off' }),
    LLM_ANSWER_RECORD,
  );
  assert.equal(recordedPlanner(log).kind, 'llm');
  assert.deepEqual(
    log.records.filter((r) => r.topic === 'outcomes').map((r) => [r.value!.status, r.value!.planner]),
    [['completed', 'llm']],
  );

  for (const env of [{}, { TAO_PLANNER: 'router' }]) {
    const report = await verify(log, env);
    assert.equal(report.first_divergence, null, JSON.stringify(report.first_divergence?.diff));
    assert.equal(report.code_drift, false);
    assert.deepEqual(
      report.configuration_drift.map((c) => [c.setting, c.recorded, c.today]),
      [['planner', 'llm', null]],
    );
    assert.ok(report.checked.thought_inputs >= 3, 'the task and every wave after the plan were re-decided');
    assert.match(
      renderVerify(report),
      /the run was planned by the retired llm planner \(TAO_PLANNER=llm; CHANGELOG\.md, Migration\): its plans are taken from the run's records/,
    );
  }

  // Its fallback flow (order-status@1) gone from today's flows: the plans are the recorded ones, so nothing else changes.
  const { dir, routes } = flowsWithOrderStatusV2();
  const gone = await verify(log, { TAO_FLOWS_DIR: dir, TAO_ROUTES: routes });
  assert.deepEqual([gone.configuration_drift.map((c) => c.setting), gone.first_divergence], [['planner'], null]);

  // The decisions after the plan are still re-decided: a changed wave is found.
  const mutated = structuredClone(log);
  const wave2 = mutated.records.find((x) => x.topic === 'thoughtRequests' && x.value!.iteration === 2)!;
  (wave2.value as unknown as ThoughtRequest).steps[0]!.input_json = '{"customer_id":"C-999999"}';
  const changed = await verify(mutated, {});
  assert.deepEqual([changed.first_divergence?.stage, changed.first_divergence?.input.topic], ['thought', 'observationResults']);
});

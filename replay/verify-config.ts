/**
 * Which configuration `replay --verify` re-decides a run with: the planner and the versioned
 * configuration the run RECORDED (`RunState.planner_kind` / `planner_config`, written by Thought),
 * not the shell's TAO_PLANNER or TAO_FLOW. Where today's configuration no longer has what the run
 * was made with (a flow version gone, another routing table), that is configuration drift, reported
 * apart from code drift (same configuration, another decision). Observation re-judges with today's
 * rules and classifier; those the run's verdicts name, where they are not today's, are configuration
 * drift too.
 */
import { observationConfig, thoughtConfig } from '../processors/wiring/index.ts';
import type { ThoughtConfig } from '../processors/thought/core.ts';
import type { ObservationConfig } from '../processors/observation/core.ts';
import { DEFAULT_FLOWS_DIR, loadFlows, type Flow } from '../processors/thought/planners/flows.ts';
import type { Planner, PlanningResult } from '../processors/thought/planners/planner.ts';
import type { ObservationResult, Outcome, RunSnapshot, RunState, ThoughtRequest } from '../schemas/types.gen.ts';
import { ConfigError } from '../runtime/errors.ts';
import { jsonField } from '../runtime/json-field.ts';
import { setting } from '../runtime/config.ts';
import { createContractAjv } from '../tools/catalog.ts';
import type { RunLog } from './log.ts';
import type { ConfigDrift, VerifyConfigs } from './verify.ts';

/** What a run's records say it was planned with (the first planning; a resumed run may re-plan). */
export interface RecordedPlanner {
  /** graph, router, react, plan-replan, or the retired llm; null for runs recorded before Thought wrote it. */
  kind: string | null;
  /** The flow key or `routes@<version>` the planner planned from; null when not recorded. */
  config: string | null;
  /** The flows the run's plans came from (`<id>@<version>`), as recorded. */
  flows: string[];
}

function flowId(key: string): string {
  return key.split('@')[0]!;
}

/** The highest version of `key`'s flow that `flows` has, as a key, or null. */
function latestVersion(flows: Map<string, Flow>, key: string): string | null {
  const versions = [...flows.values()].filter((f) => f.id === flowId(key)).map((f) => f.version);
  return versions.length ? `${flowId(key)}@${Math.max(...versions)}` : null;
}

/** Reads the recorded planner of `log` from its waves, parked snapshots and outcomes (pure). */
export function recordedPlanner(log: RunLog): RecordedPlanner {
  const runs: Array<Pick<RunState, 'planner_kind' | 'planner_config' | 'flow_id' | 'flow_version'>> = [];
  for (const r of log.records) {
    if (r.value === null) continue;
    if (r.topic === 'thoughtRequests') runs.push((r.value as unknown as ThoughtRequest).run);
    else if (r.topic === 'thoughtRuns' && (r.value as unknown as RunSnapshot).run) runs.push((r.value as unknown as RunSnapshot).run!);
    else if (r.topic === 'outcomes') runs.push(r.value as unknown as Outcome);
  }
  const first = runs.find((r) => r.planner_kind) ?? null;
  const flows = [...new Set(runs.filter((r) => r.flow_id !== 'none' && r.flow_version > 0).map((r) => `${r.flow_id}@${r.flow_version}`))];
  return { kind: first?.planner_kind ?? null, config: first?.planner_config ?? null, flows };
}

/** The planner kind runs recorded before `llm` was retired (TAO_PLANNER=llm, replaced by plan-replan). */
const RETIRED_LLM = 'llm';

/**
 * A stand-in for a retired planner: for each planner answer the run recorded (`planner_record`), the
 * plan Thought made from it (`plan_json`, under the recorded planner name). An answer with no
 * recorded plan (the run parked or ended at planning) escalates, which verify then reports as a
 * divergence (pure).
 */
function recordedPlans(log: RunLog, kind: string, config: string): Planner {
  const plans = new Map<string | null, PlanningResult>();
  for (const r of log.records) {
    const run =
      r.value === null
        ? undefined
        : r.topic === 'thoughtRequests'
          ? (r.value as unknown as ThoughtRequest).run
          : r.topic === 'thoughtRuns'
            ? (r.value as unknown as RunSnapshot).run
            : undefined;
    // A run parked or ended at planning has no plan ('null'): its answer is left to escalate.
    if (!run || run.planner_kind !== kind || run.plan_json === 'null' || plans.has(run.planner_record)) continue;
    plans.set(run.planner_record, { kind: 'plan', planner: run.planner, plan: jsonField(run.plan_json, 'run.plan_json') });
  }
  return {
    name: kind,
    config,
    plan: (_task, record) =>
      plans.get(record) ?? { kind: 'escalate', planner: kind, reason: `the retired ${kind} planner's answer has no recorded plan to re-decide from` },
  };
}

/** Today's Thought configuration for re-deciding a run, and how it differs from what the run recorded. */
export interface RunThoughtConfig {
  thought: ThoughtConfig;
  recorded: RecordedPlanner;
  drift: ConfigDrift[];
  notes: string[];
}

/**
 * Builds Thought's configuration as the run recorded it: the recorded planner kind, and for graph
 * the recorded flow; every other setting (loop bounds, catalog, routing table, flows folder) is
 * today's from `env`. A run of the retired `llm` planner is re-decided from its recorded plans, with
 * a configuration drift row saying so.
 * @throws ConfigError for a setting of `env` that is invalid whatever the run, or when today's flows
 *         have no version at all of the flow the run was planned on.
 */
export async function thoughtConfigForRun(log: RunLog, env: NodeJS.ProcessEnv): Promise<RunThoughtConfig> {
  const recorded = recordedPlanner(log);
  const notes: string[] = [];
  const drift: ConfigDrift[] = [];
  if (!recorded.kind) {
    notes.push("the run's records do not say which planner made them (recorded before planner_kind was written): re-decided with today's TAO_PLANNER");
    return { thought: await thoughtConfig(env), recorded, drift, notes };
  }
  const flows = loadFlows(setting(env, 'TAO_FLOWS_DIR') ?? DEFAULT_FLOWS_DIR, createContractAjv());
  const retired = recorded.kind === RETIRED_LLM;
  // A retired planner cannot be built: the run is re-decided with a graph planner (on any flow) whose
  // plans are replaced by the recorded ones (below), so the flows today need not have the run's.
  const runEnv: NodeJS.ProcessEnv = retired
    ? { ...env, TAO_PLANNER: 'graph', TAO_FLOW: recorded.config && flows.has(recorded.config) ? recorded.config : [...flows.keys()][0] }
    : { ...env, TAO_PLANNER: recorded.kind };
  if (recorded.kind === 'graph' && recorded.config) {
    // The planner's flow as recorded; when today's flows lack that version, the same flow's latest version, as drift.
    const today = flows.has(recorded.config) ? recorded.config : latestVersion(flows, recorded.config);
    if (today !== recorded.config)
      drift.push({
        setting: 'flow',
        recorded: recorded.config,
        today,
        explanation: `the run was planned on flow ${recorded.config}; today's flows have ${today ?? `no ${flowId(recorded.config)}`}`,
      });
    if (today === null)
      throw new ConfigError(
        `run ${log.thoughtId} was planned by ${recorded.kind} on flow ${recorded.config}, and today's flows (${setting(env, 'TAO_FLOWS_DIR') ?? DEFAULT_FLOWS_DIR}) have no version of ${flowId(recorded.config)}: nothing to re-decide it with`,
      );
    runEnv.TAO_FLOW = today;
  }
  const thought = await thoughtConfig(runEnv);
  if (retired) {
    thought.planner = recordedPlans(log, RETIRED_LLM, recorded.config ?? '');
    drift.push({
      setting: 'planner',
      recorded: RETIRED_LLM,
      today: null,
      explanation:
        "the run was planned by the retired llm planner (TAO_PLANNER=llm; CHANGELOG.md, Migration): its plans are taken from the run's records, not re-decided; every later decision is re-decided with today's code",
    });
  }
  if (recorded.kind === 'router') {
    if (recorded.config && thought.planner.config !== recorded.config)
      drift.push({
        setting: 'planner_config',
        recorded: recorded.config,
        today: thought.planner.config,
        explanation: `the run was routed by the routing table ${recorded.config}; today's is ${thought.planner.config}`,
      });
    for (const key of recorded.flows.filter((k) => !flows.has(k))) {
      const today = latestVersion(flows, key);
      drift.push({ setting: 'flow', recorded: key, today, explanation: `the run followed flow ${key}; today's flows have ${today ?? `no ${flowId(key)}`}` });
    }
  }
  return { thought, recorded, drift, notes };
}

/**
 * The rules and the classifier the run's verdicts were judged by (`rules_version`,
 * `classifier_model`), against today's Observation: each recorded one that is not today's is
 * configuration drift (pure). Verdict records written before the fields carry neither and add nothing.
 */
export function observationDrift(log: RunLog, today: Pick<ObservationConfig, 'rules' | 'classifier'>): ConfigDrift[] {
  const rules = new Set<string>();
  const classifiers = new Set<string | null>();
  for (const r of log.records) {
    if (r.topic !== 'observationResults' || r.value === null) continue;
    const obs = r.value as unknown as ObservationResult;
    // A record without rules_version predates both fields: its null classifier says nothing.
    if (obs.rules_version === null) continue;
    rules.add(obs.rules_version);
    classifiers.add(obs.classifier_model);
  }
  const todayRules = today.rules.fingerprint;
  const todayClassifier = today.classifier?.model ?? null;
  const none = 'none (TAO_SEMANTIC_CHECK=off)';
  return [
    ...[...rules]
      .filter((v) => v !== todayRules)
      .map((v) => ({
        setting: 'observation_rules' as const,
        recorded: v,
        today: todayRules,
        explanation: `the run's verdicts were judged by Observation rules ${v}; today's are ${todayRules} (TAO_OBSERVATION_RULES, rules/observation.json)`,
      })),
    ...[...classifiers]
      .filter((c) => c !== todayClassifier)
      .map((c) => ({
        setting: 'classifier_model' as const,
        recorded: c ?? none,
        today: todayClassifier,
        explanation: `the run's semantic checks ran with ${c ?? 'no classifier'}; today's Observation has ${todayClassifier ?? 'none'} (TAO_ERROR_MODEL_DIR, TAO_SEMANTIC_CHECK)`,
      })),
  ];
}

/**
 * Everything `replay --verify` re-decides `log` with: Thought as the run recorded it
 * ({@link thoughtConfigForRun}), today's Observation, and every configuration drift of both.
 * @throws ConfigError as {@link thoughtConfigForRun}, or for an invalid Observation setting of `env`.
 */
export async function verifyConfigsForRun(log: RunLog, env: NodeJS.ProcessEnv): Promise<VerifyConfigs> {
  const run = await thoughtConfigForRun(log, env);
  const observation = await observationConfig(env);
  return { thought: run.thought, observation, configurationDrift: [...run.drift, ...observationDrift(log, observation)], notes: run.notes };
}

/**
 * Which declared settings (runtime/config.ts) the Helm chart carries, and where: the chart's
 * processes, the variables each one reads, the secrets it is given, and the variables left out and why.
 * Read by deploy/gen-chart.ts (values.yaml, templates) and deploy/chart-schema.ts (values.schema.json).
 */
import { SETTINGS, type Component, type SettingName, type SettingSpec } from '../runtime/config.ts';
import type { StageName } from '../processors/stages.ts';
import type { TopicId } from '../topics/catalog.ts';

/** The chart's processes and the component of runtime/config.ts each one is; `topics` is the pre-install Job (`tao topics apply`). */
export const PROCESSES = ['thought', 'action', 'observation', 'ingress', 'callbacks', 'scheduler', 'tools', 'topics'] as const;
export type ProcessName = (typeof PROCESSES)[number];
const COMPONENT: Record<ProcessName, Component | null> = {
  thought: 'thought',
  action: 'action',
  observation: 'observation',
  ingress: 'ingress',
  callbacks: 'callbacks',
  scheduler: 'scheduler',
  tools: 'tools',
  topics: null,
};

/** Each stage's input topics (processors/<stage>/stage.ts `inputs`; test/deploy/chart-generated.test.ts checks them against the sources). */
export const STAGE_INPUTS: Record<StageName, readonly TopicId[]> = {
  thought: ['tasks', 'observationResults'],
  action: ['thoughtRequests'],
  observation: ['actionResults'],
};

/** Declared variables the chart does not take in `config`/`secrets`, and why. */
export const NOT_IN_CHART: Partial<Record<SettingName, string>> = {
  TAO_BIND_HOST: 'set by the chart: 0.0.0.0 in the pods whose port a probe or a Service reaches (stages, ingress, tools); the image binds to 127.0.0.1',
  TAO_OPS_PORT: "set by the chart to each stage's default ops port, which its probes use",
  TAO_INGRESS_PORT: "set by the chart to the variable's default, which the ingress Service and probes target",
  TAO_TOOLS_PORT: "set by the chart to the variable's default, which the tools Service and probes target",
  TAO_RUN_FROM: 'the image has no tsx: bin/tao.js always runs dist/',
};

/** Values the chart ships instead of the variable's own default (in-cluster service names). */
export const CHART_DEFAULTS: Partial<Record<SettingName, string>> = {
  KAFKA_BROKERS: 'kafka:9092',
  SCHEMA_REGISTRY_URL: 'http://schema-registry:8081',
};

/** A declared variable's spec. */
export const spec = (name: SettingName): SettingSpec => SETTINGS[name];

/** Whether the variable is read only on a development machine (local infra, tests, benchmarks). */
function developmentOnly(s: SettingSpec): boolean {
  return s.usedBy.every((c) => c === 'infra' || c === 'test' || c === 'bench');
}

/** The declared variables the chart carries: non-secret ones in `config`, secrets in `secrets`. */
export function chartSettings(): { config: SettingName[]; secrets: SettingName[]; skipped: Array<{ name: SettingName; why: string }> } {
  const config: SettingName[] = [];
  const secrets: SettingName[] = [];
  const skipped: Array<{ name: SettingName; why: string }> = [];
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const s = spec(name);
    const why = NOT_IN_CHART[name] ?? (developmentOnly(s) ? `local development only (used by ${s.usedBy.join(', ')})` : null);
    if (why) skipped.push({ name, why });
    else (s.kind === 'secret' ? secrets : config).push(name);
  }
  return { config, secrets, skipped };
}

/** The processes that connect to Kafka and the registry, and so read the variables used by `all` (the demo tool server does not). */
const KAFKA_CLIENTS: readonly ProcessName[] = PROCESSES.filter((p) => p !== 'tools');

/** The secrets a process is given: those its component reads (and those every Kafka client reads, `all`). */
export function secretsOf(process: ProcessName): SettingName[] {
  const component = COMPONENT[process];
  return chartSettings().secrets.filter((name) =>
    spec(name).usedBy.some((c) => (c === 'all' && KAFKA_CLIENTS.includes(process)) || (component !== null && c === component)),
  );
}

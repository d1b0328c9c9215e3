/**
 * The one place where stages are declared and wired to their configuration. Each stage's options
 * come from the environment, are validated here, and a bad value stops the process at start-up.
 */
import { parseDuration, setting } from '../../runtime/config.ts';
import type { Logger } from '../../runtime/log.ts';
import type { StageMetrics } from '../../runtime/metrics.ts';
import type { ExecutorEvents } from '../action/executor.ts';
import type { StageDefinition } from '../../runtime/processor.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog, createContractAjv } from '../../tools/catalog.ts';
import { envSecrets } from '../../tools/secrets.ts';
import type { Ajv, ValidateFunction } from 'ajv';
import type { ToolContracts } from '../plan.ts';
import type { EditChecks } from '../thought/approval-rules.ts';
import type { ThoughtConfig } from '../thought/core.ts';
import type { ObservationConfig, PayloadClassifier } from '../observation/core.ts';
import type { ModelLoopConfig, PriceTable } from '../thought/model/state.ts';
import type { SkillSet } from '../thought/skills.ts';
import type { ApprovalConfig, ApprovalRule } from '../thought/approval-rules.ts';
import type { ParkingConfig } from '../thought/forced-end.ts';
import { ConfigError } from '../../runtime/errors.ts';
import { MODEL_TOOL } from '../../tools/model.ts';
import { modelNames, modelToolSpecs } from '../../tools/model-config.ts';

export { DEFAULT_OPS_PORTS, STAGES, type StageName } from '../stages.ts';
import { type StageName } from '../stages.ts';

/**
 * Each stage's options come from its variables in runtime/config.ts (TAO_TOOL_CATALOG_DIR,
 * TAO_FLOWS_DIR, TAO_PLANNER and the planner's settings, the loop bounds, TAO_RUN_RETENTION, TAO_ACTION_CONCURRENCY, TAO_ACTION_COMMIT_LINGER_MS,
 * TAO_OBSERVATION_RULES, TAO_SEMANTIC_CHECK, TAO_ERROR_MODEL_DIR); docs/CONFIGURATION.md lists them.
 * @throws ConfigError naming the variable whose value does not parse, or the file that does not load.
 */
export async function defineStage(name: StageName, env: NodeJS.ProcessEnv, logger: Logger, metrics?: StageMetrics): Promise<StageDefinition> {
  // Each stage imports only its own code: a stage process neither loads nor keeps in memory the
  // others' (undici and the tool client in Action, the ONNX classifier in Observation, the planners in Thought).
  switch (name) {
    case 'thought': {
      const [{ thoughtStage }, { StageReleases }] = await Promise.all([import('../thought/stage.ts'), import('./releases.ts')]);
      // Each run is decided by the release it started on (docs/RELEASES.md): a configuration per manifest.
      const releases = new StageReleases(env, async (releaseEnv, manifest) => ({ ...(await thoughtConfig(releaseEnv)), manifest }));
      await releases.deploymentConfig();
      return {
        ...thoughtStage(releases, logger, metrics?.runMetrics(), { runRetentionMs: setting(env, 'TAO_RUN_RETENTION') }),
        follows: ['manifests'],
        prepare: (io) => releases.prepare(io, true),
      };
    }
    case 'action': {
      const [{ actionStage }, { realHttpDeps }, { StageReleases }] = await Promise.all([
        import('../action/stage.ts'),
        import('../action/invoke.ts'),
        import('./releases.ts'),
      ]);
      // A wave's tools are looked up in the catalog of the release its run started on (docs/RELEASES.md).
      const releases = new StageReleases(env, (releaseEnv) => Promise.resolve(actionCatalog(releaseEnv)));
      const catalog = await releases.deploymentConfig();
      const http = realHttpDeps();
      // The MCP SDK is loaded only when the catalog has MCP tools (transport "mcp", docs/TOOLS.md).
      if (catalog.names().some((n) => catalog.get(n)!.spec.transport === 'mcp')) {
        const { McpClients } = await import('../action/mcp.ts');
        http.mcp = new McpClients({ listTtlMs: setting(env, 'TAO_MCP_LIST_TTL_MS') });
      }
      const stage = actionStage({
        catalog,
        catalogFor: (digest) => releases.forRelease(digest),
        http,
        secrets: envSecrets(env),
        concurrency: setting(env, 'TAO_ACTION_CONCURRENCY'),
        commitLingerMs: setting(env, 'TAO_ACTION_COMMIT_LINGER_MS'),
        events: metrics && toolMetrics(metrics),
        logger,
      });
      return Object.assign(stage, {
        follows: ['manifests'] as const,
        prepare: (io: Parameters<NonNullable<StageDefinition['prepare']>>[0]) => releases.prepare(io, false),
      });
    }
    case 'observation': {
      const [{ observationStage }, { StageReleases }] = await Promise.all([import('../observation/stage.ts'), import('./releases.ts')]);
      // The error classifier is the deployment's (TAO_ERROR_MODEL_DIR), loaded once: a release's configuration shares it.
      let classifier: PayloadClassifier | null | undefined;
      const releases = new StageReleases(env, async (releaseEnv) => {
        if (classifier !== undefined) return { ...(await observationConfig({ ...releaseEnv, TAO_SEMANTIC_CHECK: 'off' })), classifier };
        const config = await observationConfig(releaseEnv);
        classifier = config.classifier;
        return config;
      });
      const deployment = await releases.deploymentConfig();
      return {
        ...observationStage({ forRelease: (d) => releases.forRelease(d), deployment }, { logger, stepMetrics: metrics?.stepMetrics() }),
        follows: ['manifests'],
        prepare: (io) => releases.prepare(io, false),
      };
    }
  }
}

/** Thought's configuration, as the stage runs it (also used by replay to re-decide recorded runs). */
export async function thoughtConfig(env: NodeJS.ProcessEnv): Promise<ThoughtConfig> {
  const [{ PlanValidator }, { DEFAULT_FLOWS_DIR, loadFlows }, { createPlanner }, { plannerSettingsFromEnv }, { loadSkills }, { DEFAULT_SYSTEM_RULES }] =
    await Promise.all([
      import('../plan.ts'),
      import('../thought/planners/flows.ts'),
      import('../thought/planners/factory.ts'),
      import('../thought/planners/config.ts'),
      import('../thought/skills.ts'),
      import('../thought/model/prompt.ts'),
    ]);
  const { dir: skillsDir } = (await import('../thought/skills-config.ts')).skillsOptionsFromEnv(env);
  const ajv = createContractAjv();
  const catalog = loadCatalog(env, ajv, 'contracts');
  const flows = loadFlows(setting(env, 'TAO_FLOWS_DIR') ?? DEFAULT_FLOWS_DIR, ajv);
  const tools = toolContracts(catalog);
  const validator = new PlanValidator(ajv, setting(env, 'TAO_MAX_PLAN_STEPS'));
  // The skills are loaded (and checked against the catalog) only when a model takes the turns.
  const skills = MODEL_PLANNERS.includes(setting(env, 'TAO_PLANNER')) ? loadSkills(skillsDir, catalog) : undefined;
  // The skills' output schemas (skills/<name>/output.schema.json): the final turn asks for an answer of that schema.
  const guards = skills && (await import('../guardrails/load.ts')).loadSkillGuards(skillsDir, (tool) => catalog.get(tool) !== undefined);
  return {
    planner: createPlanner(plannerSettingsFromEnv(env), { flows, tools, skills }),
    model: skills && {
      ...modelLoop(skills, catalog, DEFAULT_SYSTEM_RULES, (name) => guards?.get(name)?.outputSchema),
      params: setting(env, 'TAO_LLM_PARAMS'),
      toolCalls: setting(env, 'TAO_LLM_TOOL_CALLS'),
      models: modelNames(env),
      ...(await moneySettings(env, skills)),
    },
    validator,
    tools,
    maxIterations: setting(env, 'TAO_MAX_ITERATIONS'),
    costBudget: setting(env, 'TAO_COST_BUDGET'),
    noveltyWaves: setting(env, 'TAO_NOVELTY_WAVES'),
    repeatCap: setting(env, 'TAO_REPEAT_CAP'),
    reflectAfter: setting(env, 'TAO_REFLECT_AFTER'),
    approvals: { ...(await approvalSettings(env, catalog, skills)), policies: (skill) => guards?.get(skill)?.policies ?? [] },
    parking: parkingSettings(env, skills),
  };
}

/**
 * How long parked runs wait before the scheduler expires them: TAO_PARKED_RUN_TTL, and each runnable
 * skill's `metadata.parked-ttl` (processors/thought/forced-end.ts).
 * @throws ConfigError (one line) for a skill's time-to-live that is not a duration.
 */
export function parkingSettings(env: NodeJS.ProcessEnv, skills?: SkillSet): ParkingConfig {
  const bySkill = new Map<string, number>();
  for (const skill of skills?.list() ?? []) {
    const ttl = skill.metadata['parked-ttl'];
    if (ttl === undefined) continue;
    const ms = parseDuration(ttl, 1);
    if (ms === null) throw new ConfigError(`skill ${skill.name}: metadata.parked-ttl must be a duration like 2d or 12h (0: never), got "${ttl}"`);
    bySkill.set(skill.name, ms);
  }
  return { ttlMs: setting(env, 'TAO_PARKED_RUN_TTL'), skill: (name) => bySkill.get(name) };
}

/**
 * Which calls wait for approval: TAO_APPROVAL_RULES and TAO_APPROVAL_TIMEOUT, and each runnable
 * skill's `metadata.approval` and `metadata.approval-timeout` (processors/thought/approval-rules.ts).
 * @throws ConfigError (one line) for a rule that does not parse or names a tool without side effects.
 */
export async function approvalSettings(env: NodeJS.ProcessEnv, catalog: ToolCatalog, skills?: SkillSet): Promise<ApprovalConfig> {
  const { parseApprovalRules } = await import('../thought/approval-rules.ts');
  const sideEffects = (tool: string) => (catalog.get(tool) ? catalog.get(tool)!.spec.side_effects === true : undefined);
  const bySkill = new Map<string, { rules: ApprovalRule[]; timeoutMs?: number }>();
  for (const skill of skills?.list() ?? []) {
    const rules = skill.metadata.approval;
    const timeout = skill.metadata['approval-timeout'];
    if (rules === undefined && timeout === undefined) continue;
    const timeoutMs = timeout === undefined ? undefined : parseDuration(timeout, 1);
    if (timeoutMs === null)
      throw new ConfigError(`skill ${skill.name}: metadata.approval-timeout must be a duration like 30m or 24h (0: never), got "${timeout}"`);
    bySkill.set(skill.name, {
      rules: parseApprovalRules(rules ?? '', `skill ${skill.name} metadata.approval`, sideEffects),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  }
  return {
    deployment: parseApprovalRules(setting(env, 'TAO_APPROVAL_RULES') ?? '', 'TAO_APPROVAL_RULES', sideEffects),
    skill: (name) => bySkill.get(name),
    timeoutMs: setting(env, 'TAO_APPROVAL_TIMEOUT'),
  };
}

/**
 * The price table (TAO_LLM_PRICES: inline JSON, or the path of a JSON file) and the money budget
 * (TAO_MONEY_BUDGET) of the model loop.
 * @throws ConfigError (one line) for a table that does not parse, or a budget without a price for
 *   every model a turn may ask: TAO_LLM_MODEL, the fallback model, and the runnable skills' models.
 */
export async function moneySettings(env: NodeJS.ProcessEnv, skills?: SkillSet): Promise<{ prices?: PriceTable; moneyBudget?: number }> {
  const { parsePriceTable, priceOf } = await import('../thought/model/state.ts');
  const raw = setting(env, 'TAO_LLM_PRICES');
  const budget = setting(env, 'TAO_MONEY_BUDGET');
  let prices: PriceTable | undefined;
  if (raw !== undefined) {
    if (raw.trimStart().startsWith('{')) prices = parsePriceTable(raw, 'TAO_LLM_PRICES');
    else {
      const { readFileSync } = await import('node:fs');
      let text: string;
      try {
        text = readFileSync(raw, 'utf8');
      } catch (err) {
        throw new ConfigError(`TAO_LLM_PRICES: cannot read the price file ${raw} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      }
      prices = parsePriceTable(text, `TAO_LLM_PRICES file ${raw}`);
    }
  }
  if (budget > 0) {
    const names = modelNames(env);
    const asked = [
      ...new Set(
        [
          names.primary,
          names.fallback,
          ...(skills
            ?.list()
            .filter((s) => s.runnable)
            .map((s) => s.model) ?? []),
        ].filter((m): m is string => !!m),
      ),
    ];
    if (!prices) throw new ConfigError(`TAO_MONEY_BUDGET=${budget} needs TAO_LLM_PRICES: a price for ${asked.join(', ') || 'the models'}`);
    const unpriced = asked.filter((m) => !priceOf(prices!, m));
    if (unpriced.length)
      throw new ConfigError(
        `TAO_MONEY_BUDGET=${budget} needs a price for every model a turn may ask: TAO_LLM_PRICES prices no ${unpriced.join(', ')} (add it, or "*")`,
      );
  }
  return { ...(prices ? { prices } : {}), ...(budget > 0 ? { moneyBudget: budget } : {}) };
}

/**
 * What an approver's edited arguments are checked against outside Thought (the ingress answers a
 * refused edit at once; Thought checks again): the catalog's input contracts and the skills'
 * policies, loaded as Thought and Observation load them.
 * @throws ConfigError naming the file that does not load.
 */
export async function editChecks(env: NodeJS.ProcessEnv): Promise<EditChecks> {
  const [{ loadSkillGuards }, { skillsOptionsFromEnv }] = await Promise.all([import('../guardrails/load.ts'), import('../thought/skills-config.ts')]);
  const catalog = loadCatalog(env, createContractAjv(), 'contracts');
  // As Observation: a policy naming a tool this catalog lacks never meets a call (the contract refuses an unknown tool first).
  const guards = loadSkillGuards(skillsOptionsFromEnv(env).dir, () => true);
  return { contracts: toolContracts(catalog), policiesOf: (skill) => guards.get(skill)?.policies ?? [] };
}

/** Observation's configuration, as the stage runs it (also used by replay). */
export async function observationConfig(env: NodeJS.ProcessEnv): Promise<ObservationConfig> {
  const [{ DEFAULT_RULES_FILE, loadObservationRules }, { loadSkillGuards }, { skillsOptionsFromEnv }] = await Promise.all([
    import('../observation/rules.ts'),
    import('../guardrails/load.ts'),
    import('../thought/skills-config.ts'),
  ]);
  const ajv = createContractAjv();
  const catalog = loadCatalog(env, ajv, 'contracts');
  const rules = loadObservationRules(setting(env, 'TAO_OBSERVATION_RULES') ?? DEFAULT_RULES_FILE, ajv, (tool) => catalog.get(tool) !== undefined);
  // The skills' policies (skills/<name>/policies.json): the gate checks a model's proposed calls against them.
  // Their tool names are checked against the catalog where the skills run (Thought with a model
  // planner, `tao skills show`); here a policy of a tool the catalog lacks never meets a call (one of an
  // unknown tool is rejected first), and a graph-planner deployment with its own catalog must start.
  const guards = loadSkillGuards(skillsOptionsFromEnv(env).dir, () => true);
  return { catalog, ajv, rules, classifier: await semanticClassifier(env), policies: (skill) => guards.get(skill)?.policies ?? [] };
}

/** The ONNX error-payload classifier (TAO_ERROR_MODEL_DIR; `TAO_SEMANTIC_CHECK=off` runs without it). */
export async function semanticClassifier(env: NodeJS.ProcessEnv): Promise<PayloadClassifier | null> {
  if (setting(env, 'TAO_SEMANTIC_CHECK') === 'off') return null;
  const { DEFAULT_ERROR_MODEL_DIR, ErrorClassifier } = await import('../observation/classifier.ts');
  const model = await ErrorClassifier.load(setting(env, 'TAO_ERROR_MODEL_DIR') ?? DEFAULT_ERROR_MODEL_DIR);
  return { model: model.modelId, classify: (text) => model.classify(text) };
}

/**
 * The tool catalog: TAO_TOOL_CATALOG_DIR's files and the model tools (tools/model-config.ts). Action
 * (`call`) gets the model endpoint TAO_LLM_BASE_URL names; Thought, Observation and replay
 * (`contracts`) need only its contracts, so they work without the endpoint.
 */
export function loadCatalog(env: NodeJS.ProcessEnv, ajv: Ajv, purpose: 'call' | 'contracts'): ToolCatalog {
  return ToolCatalog.load(setting(env, 'TAO_TOOL_CATALOG_DIR') ?? DEFAULT_CATALOG_DIR, env, ajv, modelToolSpecs(env, purpose));
}

/** The planners whose runs a model takes turns in: each turn is a step of the model tool (docs/ARCHITECTURE.md, The model in the loop). */
const MODEL_PLANNERS: readonly string[] = ['react', 'plan-replan'];

/**
 * Action's catalog (`call`), refused when it would dead-letter every wave of the runs: a planner
 * whose runs a model takes turns in (TAO_PLANNER=react or plan-replan) with no model tool in it.
 * `tao run all` calls it before it starts anything.
 * @throws ConfigError (one line naming TAO_PLANNER and TAO_LLM_BASE_URL), or the catalog's own.
 */
export function actionCatalog(env: NodeJS.ProcessEnv): ToolCatalog {
  const catalog = loadCatalog(env, createContractAjv(), 'call');
  const planner = setting(env, 'TAO_PLANNER');
  if (MODEL_PLANNERS.includes(planner) && !catalog.get(MODEL_TOOL))
    throw new ConfigError(
      `TAO_PLANNER=${planner} needs the model tool ${MODEL_TOOL} in Action's catalog, and TAO_LLM_BASE_URL is not set: set it (and TAO_LLM_MODEL) to the model endpoint, or every model turn is dead-lettered UNKNOWN_TOOL`,
    );
  return catalog;
}

/** Thought's model loop: runnable skills by name, the catalog tools as the model sees them. */
function modelLoop(
  skills: SkillSet,
  catalog: ToolCatalog,
  system: string,
  outputSchema: (skill: string) => Record<string, unknown> | undefined,
): ModelLoopConfig {
  return {
    tool: MODEL_TOOL,
    skill: (name) => {
      const skill = skills.get(name);
      if (!skill?.runnable) return undefined;
      const output = outputSchema(name);
      return output ? { ...skill, outputSchema: output } : skill;
    },
    toolSpec: (name) => {
      const spec = catalog.get(name)?.spec;
      return spec && { name: spec.name, description: spec.description, parameters: spec.parameters };
    },
    identityParameters: (name) => catalog.get(name)?.spec.identity_parameters ?? [],
    responseSchema: (name) => catalog.get(name)?.spec.response,
    sideEffects: (name) => catalog.get(name)?.spec.side_effects === true,
    system,
  };
}

/** What plan validation and the planners need to know of the catalog. */
export function toolContracts(catalog: ToolCatalog): ToolContracts {
  let ajv: Ajv | null = null;
  const fieldChecks = new Map<string, ValidateFunction | null>();
  const wholeChecks = new Map<string, ValidateFunction>();
  return {
    refusesInput: (tool, field, value) => {
      const key = `${tool}\u0000${field}`;
      if (!fieldChecks.has(key)) {
        const schema = (catalog.get(tool)?.spec.parameters as { properties?: Record<string, unknown> } | undefined)?.properties?.[field];
        ajv ??= createContractAjv();
        fieldChecks.set(key, schema === undefined ? null : ajv.compile(schema as object));
      }
      const check = fieldChecks.get(key)!;
      if (check === null || check(value)) return null;
      return (check.errors ?? []).map((e) => e.message ?? 'invalid').join(', ');
    },
    refusesArguments: (tool, args) => {
      const entry = catalog.get(tool);
      if (!entry) return `${tool} is not in the catalog`;
      if (!wholeChecks.has(tool)) {
        ajv ??= createContractAjv();
        wholeChecks.set(tool, ajv.compile(entry.spec.parameters as object));
      }
      const check = wholeChecks.get(tool)!;
      if (check(args)) return null;
      return (check.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`).join(', ');
    },
    has: (tool) => catalog.get(tool) !== undefined,
    responseFields: (tool) => {
      const props = (catalog.get(tool)?.spec.response as { properties?: Record<string, unknown> } | undefined)?.properties;
      return props ? Object.keys(props) : null;
    },
    cost: (tool) => catalog.get(tool)?.spec.cost ?? 1,
  };
}

const BREAKER_LEVEL = { closed: 0, half_open: 1, open: 2 } as const;

function toolMetrics(metrics: StageMetrics): ExecutorEvents {
  return {
    onCall: (tool, result) => {
      const status = result.status_code !== null ? String(result.status_code) : (result.error?.type ?? 'none');
      metrics.toolCallSeconds.observe({ tool, status }, result.response_time_ms / 1000);
      if (result.attempts > 1) metrics.toolRetries.inc({ tool }, result.attempts - 1);
    },
    onFallback: (tool, fallback) => metrics.fallbacks.inc({ tool, fallback }),
    onBreaker: (tool, state) => metrics.breakerState.set({ tool }, BREAKER_LEVEL[state]),
  };
}

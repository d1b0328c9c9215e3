/** Thought's settings: the planner, flows and skills, the model and its fallback, budgets, approvals and run retention. Part of the one declaration of settings (runtime/config.ts, `SETTINGS`). */
import { PACKAGE_PATH, type SettingSpec } from './spec.ts';

/** What TAO_PLANNER=llm says at start-up since the `llm` planner was retired (CHANGELOG.md, "Migration"). */
/** The processes that build the model tools from the endpoint's settings (tools/model-config.ts). */
const MODEL_ENDPOINT_USERS = ['thought', 'action', 'observation', 'replay'] as const;
const PLANNER_LLM_RETIRED =
  "use TAO_PLANNER=plan-replan with a skill for the task's intent in TAO_SKILLS_DIR: the model's plans then go through Action as recorded steps, with its retries, breaker, fallback model and money budget (CHANGELOG.md, Migration)";

/** Variables Thought read once and reads no more, each with what replaces it: setting one is a one-line start-up error that says so. */
export const RETIRED_THOUGHT_SETTINGS: Readonly<Record<string, string>> = {
  TAO_LLM_MAX_TOKENS:
    "it was the retired llm planner's max_tokens; with TAO_PLANNER=plan-replan a plan turn's max_tokens is the generation share of the skill's context window (docs/PLANNERS.md)",
};

export const THOUGHT_SETTINGS = {
  // Thought
  TAO_PLANNER: {
    kind: 'enum',
    values: ['router', 'graph', 'react', 'plan-replan'],
    retired: { llm: PLANNER_LLM_RETIRED },
    default: 'router',
    meaning:
      'planner: the ONNX intent router, one graph flow, react (the router picks a skill, a model takes the turns), or plan-replan (as react, but a skill that names no mode has the model write whole plans, re-planned on reflection; docs/PLANNERS.md). llm is retired: use plan-replan. Action reads it too: with react or plan-replan it refuses to start without the model tool (TAO_LLM_BASE_URL)',
    usedBy: ['thought', 'action', 'replay'],
  },
  TAO_FLOW: {
    kind: 'string',
    default: 'order-status@1',
    pattern: /^[^@\s]+@[0-9]+$/,
    hint: '<flow id>@<version>',
    meaning: "the graph planner's flow",
    usedBy: ['thought', 'replay'],
  },
  TAO_FLOWS_DIR: { kind: 'string', defaultNote: `flows/ ${PACKAGE_PATH}`, meaning: 'folder of flow files', usedBy: ['thought', 'replay'] },
  TAO_ROUTES: {
    kind: 'string',
    defaultNote: `flows/routes.json ${PACKAGE_PATH}`,
    meaning: "the router planner's intent → flow table",
    usedBy: ['thought', 'replay'],
  },
  TAO_INTENT_MODEL_DIR: {
    kind: 'string',
    defaultNote: `models/intent-router ${PACKAGE_PATH}`,
    meaning: 'the ONNX intent router model',
    usedBy: ['thought', 'replay', 'cli'],
  },
  TAO_INTENT_THRESHOLD: {
    kind: 'number',
    default: '0.4',
    min: 0,
    max: 1,
    meaning: 'confidence below which the router escalates a task',
    usedBy: ['thought', 'replay'],
  },
  TAO_ROUTE_MODEL_BELOW: {
    kind: 'number',
    default: '0.9',
    min: 0,
    max: 1,
    meaning:
      'with TAO_PLANNER=react or plan-replan: a ticket the router calls unknown at a confidence below this gets one constrained model turn that chooses a runnable skill or none (none escalates as before); 0: never ask the model',
    usedBy: ['thought', 'replay'],
  },
  TAO_LLM_BASE_URL: {
    kind: 'url',
    meaning:
      'API base up to its version segment (requests go to <base>/chat/completions, or <base>/responses or <base>/messages by TAO_LLM_API); required for Action to call the model when TAO_PLANNER=react or plan-replan',
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_API: {
    kind: 'enum',
    values: ['chat', 'responses', 'messages'],
    default: 'chat',
    meaning:
      "the endpoint's API: `chat` (OpenAI chat completions, <base>/chat/completions), `responses` (OpenAI Responses, <base>/responses, store: false) or `messages` (Anthropic Messages, <base>/messages, key sent as x-api-key); Action translates at the wire, so runs, gate and replay are the same on each (docs/MODEL-WIRES.md)",
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_MODEL: {
    kind: 'string',
    meaning: 'model name; required when TAO_PLANNER=react or plan-replan',
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_API_KEY_ENV: {
    kind: 'string',
    default: 'TAO_LLM_API_KEY',
    pattern: /^[A-Za-z_][A-Za-z0-9_]*$/,
    hint: 'the name of an environment variable',
    meaning: 'name of the variable holding the API key',
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_API_KEY: {
    kind: 'secret',
    meaning: 'API key, sent as a Bearer token (unset: no Authorization header)',
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_FALLBACK_MODEL: {
    kind: 'string',
    meaning:
      "a second model Action asks (tool model.chat_fallback) when the first answers 5xx, times out, is unreachable, rate-limited after its retries, says the model or its capacity is unavailable (404 model_not_found, 503), or its breaker is open (not on other 4xx); at TAO_LLM_FALLBACK_BASE_URL, else at the primary's endpoint with its key (TAO_PLANNER=react)",
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_FALLBACK_BASE_URL: {
    kind: 'url',
    meaning:
      "OpenAI-compatible API base of the fallback model, another endpoint than TAO_LLM_BASE_URL; with it alone the fallback is TAO_LLM_MODEL there (unset: the fallback model at the primary's endpoint)",
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_FALLBACK_API: {
    kind: 'enum',
    values: ['chat', 'responses', 'messages'],
    defaultNote: "TAO_LLM_API's value",
    meaning: "the fallback endpoint's API (chat, responses or messages, as TAO_LLM_API)",
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_FALLBACK_API_KEY_ENV: {
    kind: 'string',
    pattern: /^[A-Za-z_][A-Za-z0-9_]*$/,
    hint: 'the name of an environment variable',
    meaning:
      "name of the variable holding the fallback endpoint's API key (with TAO_LLM_FALLBACK_BASE_URL; unset: no key is sent there: the primary's key never goes to another endpoint)",
    usedBy: ['action', 'observation', 'replay'],
  },
  TAO_LLM_TIMEOUT_MS: {
    kind: 'duration',
    default: '20s',
    min: 1,
    max: 600000,
    meaning: 'budget of one LLM request',
    usedBy: MODEL_ENDPOINT_USERS,
  },
  TAO_LLM_PARAMS: {
    kind: 'enum',
    values: ['chat', 'reasoning'],
    default: 'chat',
    meaning:
      'sampling: `chat` sends `temperature: 0` (0.7 with a `seed` on the turn after a refused answer) and `max_tokens`; `reasoning` (o-series, gpt-5: models refusing both) sends `max_completion_tokens` only',
    usedBy: ['thought', 'replay'],
  },
  TAO_LLM_TOOL_CALLS: {
    kind: 'enum',
    values: ['native', 'json_schema'],
    default: 'native',
    meaning:
      'how a model turn asks for tool calls when its skill names no `tool-calls`: `native` offers `tools`; `json_schema` asks for a `response_format` whose schema is a oneOf over the offered tools, a final answer and a question to the customer (constrained decoding: for models whose native tool calling is weak)',
    usedBy: ['thought', 'replay'],
  },
  TAO_SKILLS_DIR: {
    kind: 'string',
    defaultNote: `skills/ ${PACKAGE_PATH}`,
    meaning:
      'skills folder: skills/<name>/SKILL.md in the Agent Skills format, with optional policies.json (checked by Observation) and output.schema.json (docs/PLANNERS.md); the ingress lists them in the A2A agent card',
    usedBy: ['thought', 'observation', 'replay', 'cli', 'ingress'],
  },
  TAO_MAX_PLAN_STEPS: { kind: 'int', default: '50', min: 1, max: 1000, meaning: 'steps a plan may have', usedBy: ['thought', 'replay'] },
  TAO_MAX_ITERATIONS: { kind: 'int', default: '10', min: 1, max: 1000, meaning: 'waves per run before budget_exhausted', usedBy: ['thought', 'replay'] },
  TAO_COST_BUDGET: { kind: 'int', default: '0', min: 0, max: 1000000, meaning: 'cost units per run (0: unlimited)', usedBy: ['thought', 'replay'] },
  TAO_NOVELTY_WAVES: { kind: 'int', default: '3', min: 1, max: 100, meaning: 'waves without new information that end a run', usedBy: ['thought', 'replay'] },
  TAO_REPEAT_CAP: { kind: 'int', default: '3', min: 1, max: 100, meaning: 'identical calls (tool + input) per run', usedBy: ['thought', 'replay'] },
  TAO_REFLECT_AFTER: { kind: 'int', default: '2', min: 1, max: 20, meaning: 'consecutive failures of a step before reflection', usedBy: ['thought', 'replay'] },
  TAO_LLM_PRICES: {
    kind: 'string',
    meaning:
      'price table of the models, per million tokens: a JSON object {"<model>": {"input": 0.15, "output": 0.6, "cached": 0.075}, "*": {...}} or the path of a JSON file holding one (checked at start, one line naming the model and field); with it every model answer is priced: the outcome\'s model_cost, tao_model_cost_total by model and skill (docs/PLANNERS.md, Money)',
    usedBy: ['thought', 'replay'],
  },
  TAO_MONEY_BUDGET: {
    kind: 'number',
    default: '0',
    min: 0,
    max: 1000000000,
    meaning:
      "money a run's model turns may cost, in the price table's currency (0: unlimited); a run ends budget_exhausted / money_budget before the turn whose prompt estimate × input price + max_tokens × output price would cross it (needs TAO_LLM_PRICES pricing the models asked)",
    usedBy: ['thought', 'replay'],
  },
  TAO_APPROVAL_RULES: {
    kind: 'string',
    meaning:
      "which calls of tools with side effects wait for a person's approval: entries TOOL:always, TOOL:never, TOOL:ARG>N or TOOL:ARG>=N separated by spaces, e.g. refunds.create:amount_cents>5000; a skill's metadata.approval overrides it per tool in its runs (docs/ARCHITECTURE.md, section Approval before side effects)",
    usedBy: ['thought', 'replay'],
  },
  TAO_APPROVAL_TIMEOUT: {
    kind: 'duration',
    default: '24h',
    min: 0,
    max: 365 * 86400000,
    meaning:
      "how long a run waits for an approval before the scheduler (tao run scheduler) writes its time-out and the call is treated as denied (approval_timeout); a skill's metadata.approval-timeout overrides it; 0: never",
    usedBy: ['thought', 'replay'],
  },
  TAO_PARKED_RUN_TTL: {
    kind: 'duration',
    default: '7d',
    min: 0,
    max: 365 * 86400000,
    meaning:
      "how long a run parked awaiting input or approval waits before the scheduler (tao run scheduler) ends it expired (parked_expired), counted from when it parked; a skill's metadata.parked-ttl overrides it; 0: never (docs/ARCHITECTURE.md, section Every run ends)",
    usedBy: ['thought', 'scheduler', 'replay'],
  },
  TAO_OBSERVATION_DEADLINE: {
    kind: 'duration',
    default: '1h',
    min: 0,
    max: 365 * 86400000,
    meaning:
      "how long a running run's latest wave may wait for its observation before the scheduler ends the run failed (observation_deadline); must exceed the longest a wave takes, Action's and Observation's lag included; 0: never (docs/ARCHITECTURE.md, section Every run ends)",
    usedBy: ['scheduler'],
  },
  TAO_SCHEDULER_TICK_MS: {
    kind: 'duration',
    default: '1s',
    min: 10,
    max: 60000,
    meaning: 'how often the scheduler looks for approvals, parked runs and waves past their deadline',
    usedBy: ['scheduler'],
  },
  TAO_RUN_RETENTION: {
    kind: 'duration',
    default: '7d',
    min: 1000,
    max: 365 * 86400000,
    meaning:
      "record time an ended run stays in Thought's store (thought.runs) before it is tombstoned; a task or observation of an unknown run that far behind the partition's record time is ignored (docs/ARCHITECTURE.md, section A bounded run store)",
    usedBy: ['thought'],
  },
} as const satisfies Record<string, SettingSpec>;

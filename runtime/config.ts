import { ConfigError } from './errors.ts';

/**
 * The one declaration of every environment variable the product reads (`TAO_*`, `KAFKA_*`,
 * `SCHEMA_REGISTRY_*`, and the OpenTelemetry endpoint): its kind, default, range, meaning and the
 * components that use it. Code reads a variable only through {@link setting} (or
 * {@link loadRuntimeConfig} for the connection settings), so a value is parsed by one rule.
 *
 * Rules every variable follows:
 * - An empty value counts as unset (the default applies).
 * - A value that does not parse stops the process at start-up with one line naming the variable
 *   and the value: `TAO_INGRESS_MAX_IN_FLIGHT must be an integer >= 1, got "abc"`. Secret values
 *   are never repeated in a message.
 * - `duration`: a number with a unit (`250ms`, `30s`, `5m`, `2h`, `7d`, decimals allowed:
 *   `1.5s`), or a plain number in the unit the name ends with (`_MS`: milliseconds, `_S`:
 *   seconds). Parsed to whole milliseconds.
 * - `bool`: true/false/1/0; `enum`: one of the listed values, case-insensitive.
 * - An unknown `TAO_*` name in the environment is refused by {@link checkEnvironment}, with the
 *   closest known name suggested. Names a tool catalog references (`${NAME}`) are known too.
 *
 * The README's configuration table is generated from {@link SETTINGS}
 * (`node --import tsx scripts/gen-config-docs.ts`); a test fails when it is stale.
 */
export type SettingKind = 'string' | 'int' | 'number' | 'bool' | 'enum' | 'port' | 'url' | 'duration' | 'list' | 'secret';

/** Who reads a variable: a process (`tao run <name>`), the CLI commands, local infra, or tests/benchmarks only. */
export type Component =
  'all' | 'thought' | 'action' | 'observation' | 'ingress' | 'callbacks' | 'scheduler' | 'tools' | 'cli' | 'replay' | 'infra' | 'bench' | 'test';

export interface SettingSpec {
  kind: SettingKind;
  /** Default, written as a user would write the value and parsed by the same rule. Absent: optional, no value. */
  default?: string;
  /** Shown in docs instead of `default` when the default is not a value of the variable (a path in the package, a per-process port). */
  defaultNote?: string;
  /** Inclusive bounds: int, number, port; milliseconds for a duration. */
  min?: number;
  max?: number;
  /** Allowed values of an enum, lower case. */
  values?: readonly string[];
  /** `string` values and each `list` item must match, described by `hint` in the error. */
  pattern?: RegExp;
  hint?: string;
  /** `list` items that must each be an http(s) URL. */
  urlItems?: boolean;
  meaning: string;
  usedBy: readonly Component[];
  /** Read by tests or benchmarks only; declared so that setting it in a stage's environment is not refused. */
  testOnly?: boolean;
}

const HOST_PORT = /^[^\s:,]+:[0-9]{1,5}$/;
const PACKAGE_PATH = 'in the package';

export const SETTINGS = {
  // Kafka and the schema registry
  KAFKA_BROKERS: { kind: 'list', default: '127.0.0.1:9092', pattern: HOST_PORT, hint: 'host:port', meaning: 'Kafka bootstrap brokers', usedBy: ['all'] },
  KAFKA_SSL: { kind: 'bool', default: 'false', meaning: 'connect to Kafka over TLS', usedBy: ['all'] },
  KAFKA_SSL_CA_FILE: {
    kind: 'string',
    meaning: "PEM file of the CA certificate(s) that signed the brokers' certificates, trusted besides the system CAs (needs KAFKA_SSL=true)",
    usedBy: ['all'],
  },
  KAFKA_SSL_REJECT_UNAUTHORIZED: {
    kind: 'bool',
    default: 'true',
    meaning: 'false: accept a broker certificate that does not verify (testing only; needs KAFKA_SSL=true)',
    usedBy: ['all'],
  },
  KAFKA_SASL_MECHANISM: {
    kind: 'enum',
    values: ['plain', 'scram-sha-256', 'scram-sha-512'],
    meaning: 'SASL mechanism (needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD)',
    usedBy: ['all'],
  },
  KAFKA_SASL_USERNAME: { kind: 'string', meaning: 'SASL user name', usedBy: ['all'] },
  KAFKA_SASL_PASSWORD: { kind: 'secret', meaning: 'SASL password', usedBy: ['all'] },
  SCHEMA_REGISTRY_URL: { kind: 'url', default: 'http://127.0.0.1:8081', meaning: 'Confluent-compatible schema registry', usedBy: ['all'] },
  SCHEMA_REGISTRY_USERNAME: { kind: 'string', meaning: 'registry basic-auth user', usedBy: ['all'] },
  SCHEMA_REGISTRY_PASSWORD: { kind: 'secret', meaning: 'registry basic-auth password', usedBy: ['all'] },
  TAO_NAMESPACE: {
    kind: 'string',
    default: '',
    pattern: /^[a-zA-Z0-9_-]{0,64}$/,
    hint: 'up to 64 letters, digits, _ or -',
    meaning: 'prefix of every topic, subject and consumer group (isolates tests and tenants)',
    usedBy: ['all'],
  },
  TAO_SESSION_TIMEOUT_MS: { kind: 'duration', default: '10s', min: 6000, max: 300000, meaning: 'consumer group session timeout', usedBy: ['all'] },
  TAO_STARTUP_WAIT_MS: {
    kind: 'duration',
    default: '2m',
    min: 0,
    max: 3600000,
    meaning: 'how long a starting stage, ingress or dispatcher waits for an unreachable Kafka (a line every 5 s) before it exits 1',
    usedBy: ['all'],
  },

  // Processes
  TAO_BIND_HOST: {
    kind: 'string',
    default: '127.0.0.1',
    pattern: /^[A-Za-z0-9.:-]+$/,
    hint: 'a host name or IP address',
    meaning: 'address every server binds: stage /health and /metrics, ingress, demo tool server (0.0.0.0: all interfaces)',
    usedBy: ['thought', 'action', 'observation', 'ingress', 'tools'],
  },
  TAO_OPS_PORT: {
    kind: 'port',
    min: 0,
    max: 65535,
    defaultNote: '9401, 9402, 9403 for thought, action, observation; 9404 for a source',
    meaning: "port of a stage's /health and /metrics (0: any free port)",
    usedBy: ['thought', 'action', 'observation'],
  },
  TAO_TOOLS_PORT: { kind: 'port', default: '7070', min: 0, max: 65535, meaning: 'port of the demo tool server', usedBy: ['tools'] },
  TAO_INGRESS_PORT: { kind: 'port', default: '8080', min: 0, max: 65535, meaning: 'port of the HTTP ingress', usedBy: ['ingress'] },
  TAO_LOG_LEVEL: {
    kind: 'enum',
    values: ['debug', 'info', 'warn', 'error'],
    default: 'info',
    meaning: 'lowest level written to the JSON log (CLI commands: error unless set)',
    usedBy: ['all'],
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    kind: 'url',
    meaning: 'OTLP/HTTP endpoint that receives trace spans, /v1/traces appended (unset: no export; docs/OBSERVABILITY.md)',
    usedBy: ['thought', 'action', 'observation'],
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    kind: 'url',
    meaning: 'OTLP/HTTP traces endpoint, used as is (wins over OTEL_EXPORTER_OTLP_ENDPOINT)',
    usedBy: ['thought', 'action', 'observation'],
  },
  OTEL_EXPORTER_OTLP_PROTOCOL: {
    kind: 'enum',
    values: ['http/json'],
    meaning: 'OTLP protocol; only http/json is supported',
    usedBy: ['thought', 'action', 'observation'],
  },
  OTEL_SERVICE_NAME: {
    kind: 'string',
    defaultNote: 'tao-<stage>',
    meaning: 'service name of the exported spans',
    usedBy: ['thought', 'action', 'observation'],
  },
  OTEL_BSP_SCHEDULE_DELAY: {
    kind: 'int',
    default: '5000',
    min: 0,
    max: 3600000,
    meaning: 'milliseconds between two span exports',
    usedBy: ['thought', 'action', 'observation'],
  },
  OTEL_SDK_DISABLED: { kind: 'bool', default: 'false', meaning: 'true: no tracing whatever the endpoint', usedBy: ['thought', 'action', 'observation'] },

  // Thought
  TAO_PLANNER: {
    kind: 'enum',
    values: ['router', 'graph', 'llm', 'react', 'plan-replan'],
    default: 'router',
    meaning:
      'planner: the ONNX intent router, one graph flow, an LLM plan, react (the router picks a skill, a model takes the turns), or plan-replan (as react, but a skill that names no mode has the model write whole plans, re-planned on reflection; docs/PLANNERS.md)',
    usedBy: ['thought', 'replay'],
  },
  TAO_FLOW: {
    kind: 'string',
    default: 'order-status@1',
    pattern: /^[^@\s]+@[0-9]+$/,
    hint: '<flow id>@<version>',
    meaning: "the graph planner's flow (and the LLM planner's fallback)",
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
  TAO_LLM_BASE_URL: {
    kind: 'url',
    meaning:
      'OpenAI-compatible API base (requests go to <base>/chat/completions); required when TAO_PLANNER=llm, and for Action to call the model when TAO_PLANNER=react',
    usedBy: ['thought', 'action', 'observation', 'replay'],
  },
  TAO_LLM_MODEL: { kind: 'string', meaning: 'model name; required when TAO_PLANNER=llm', usedBy: ['thought', 'action', 'observation', 'replay'] },
  TAO_LLM_API_KEY_ENV: {
    kind: 'string',
    default: 'TAO_LLM_API_KEY',
    pattern: /^[A-Za-z_][A-Za-z0-9_]*$/,
    hint: 'the name of an environment variable',
    meaning: 'name of the variable holding the API key',
    usedBy: ['thought', 'action', 'observation', 'replay'],
  },
  TAO_LLM_API_KEY: {
    kind: 'secret',
    meaning: 'API key, sent as a Bearer token (unset: no Authorization header)',
    usedBy: ['thought', 'action', 'observation', 'replay'],
  },
  TAO_LLM_FALLBACK_MODEL: {
    kind: 'string',
    meaning:
      "a second model Action asks (tool model.chat_fallback) when the first answers 5xx, times out, is unreachable, rate-limited after its retries, says the model or its capacity is unavailable (404 model_not_found, 503), or its breaker is open (not on other 4xx); at TAO_LLM_FALLBACK_BASE_URL, else at the primary's endpoint with its key (TAO_PLANNER=react)",
    usedBy: ['thought', 'action', 'observation', 'replay'],
  },
  TAO_LLM_FALLBACK_BASE_URL: {
    kind: 'url',
    meaning:
      "OpenAI-compatible API base of the fallback model, another endpoint than TAO_LLM_BASE_URL; with it alone the fallback is TAO_LLM_MODEL there (unset: the fallback model at the primary's endpoint)",
    usedBy: ['thought', 'action', 'observation', 'replay'],
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
    usedBy: ['thought', 'action', 'observation', 'replay'],
  },
  TAO_LLM_MAX_TOKENS: { kind: 'int', default: '2048', min: 1, max: 1000000, meaning: '`max_tokens` of an LLM request', usedBy: ['thought', 'replay'] },
  TAO_LLM_PARAMS: {
    kind: 'enum',
    values: ['chat', 'reasoning'],
    default: 'chat',
    meaning:
      'sampling parameters of model requests: `chat` sends `temperature: 0` and `max_tokens`; `reasoning` (OpenAI o-series, gpt-5 and other reasoning models, which refuse both) sends `max_completion_tokens` and no temperature',
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
      'skills folder: skills/<name>/SKILL.md in the Agent Skills format, with optional policies.json (checked by Observation) and output.schema.json (docs/PLANNERS.md)',
    usedBy: ['thought', 'observation', 'replay', 'cli'],
  },
  TAO_MAX_PLAN_STEPS: { kind: 'int', default: '50', min: 1, max: 1000, meaning: 'steps a plan may have', usedBy: ['thought', 'replay'] },
  TAO_MAX_ITERATIONS: { kind: 'int', default: '10', min: 1, max: 1000, meaning: 'waves per run before budget_exhausted', usedBy: ['thought', 'replay'] },
  TAO_COST_BUDGET: { kind: 'int', default: '0', min: 0, max: 1000000, meaning: 'cost units per run (0: unlimited)', usedBy: ['thought', 'replay'] },
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
  TAO_NOVELTY_WAVES: { kind: 'int', default: '3', min: 1, max: 100, meaning: 'waves without new information that end a run', usedBy: ['thought', 'replay'] },
  TAO_REPEAT_CAP: { kind: 'int', default: '3', min: 1, max: 100, meaning: 'identical calls (tool + input) per run', usedBy: ['thought', 'replay'] },
  TAO_REFLECT_AFTER: { kind: 'int', default: '2', min: 1, max: 20, meaning: 'consecutive failures of a step before reflection', usedBy: ['thought', 'replay'] },
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
  TAO_SCHEDULER_TICK_MS: {
    kind: 'duration',
    default: '1s',
    min: 10,
    max: 60000,
    meaning: 'how often the scheduler looks for approvals past their deadline',
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

  // Action
  TAO_TOOL_CATALOG_DIR: {
    kind: 'string',
    defaultNote: `tools/catalog ${PACKAGE_PATH}`,
    meaning: 'tool catalog folder (docs/TOOLS.md)',
    usedBy: ['thought', 'action', 'observation', 'replay'],
  },
  TAO_MCP_LIST_TTL_MS: {
    kind: 'duration',
    default: '60s',
    min: 0,
    max: 86400000,
    meaning:
      "how long Action trusts an MCP server's tools/list before the next call to that server lists again, so at most how long after a tool's definition changed on the server (since `tao tools import-mcp`) it is still called; from then on it is refused (a tools/list_changed notification refreshes the list at once; 0: list before every call; docs/TOOLS.md, MCP tools)",
    usedBy: ['action'],
  },
  TAO_ACTION_CONCURRENCY: {
    kind: 'int',
    default: '32',
    min: 1,
    max: 1000,
    meaning:
      'waves in flight per Action instance, across its partitions (its I/O capacity: size it as target waves/s × tool latency in s; docs/BENCHMARKS.md, Scaling Action)',
    usedBy: ['action'],
  },
  TAO_ACTION_COMMIT_LINGER_MS: {
    kind: 'int',
    default: '20',
    min: 0,
    max: 1000,
    meaning:
      "how long a finished wave waits, at most, for its partition's waves still in flight, to commit with them in one transaction (fewer, larger transactions with slow tools, at that much latency; docs/BENCHMARKS.md, Scaling Action)",
    usedBy: ['action'],
  },
  TAO_DEMO_TOOL_ORIGIN: {
    kind: 'url',
    defaultNote: 'http://127.0.0.1:7070, written in the catalog files',
    meaning: 'origin of the demo tools, referenced by the catalog',
    usedBy: ['action', 'thought', 'observation'],
  },

  // Observation
  TAO_OBSERVATION_RULES: {
    kind: 'string',
    defaultNote: `rules/observation.json ${PACKAGE_PATH}`,
    meaning: "Observation's rules file",
    usedBy: ['observation', 'replay'],
  },
  TAO_SEMANTIC_CHECK: { kind: 'enum', values: ['on', 'off'], default: 'on', meaning: "Observation's ONNX error classifier", usedBy: ['observation', 'replay'] },
  TAO_ERROR_MODEL_DIR: {
    kind: 'string',
    defaultNote: `models/error-classifier ${PACKAGE_PATH}`,
    meaning: 'the ONNX error classifier model',
    usedBy: ['observation', 'replay', 'cli'],
  },

  // Ingress
  TAO_INGRESS_MAX_IN_FLIGHT: { kind: 'int', default: '1000', min: 1, meaning: 'runs in flight above which the ingress answers 503', usedBy: ['ingress'] },
  TAO_INGRESS_KEYS_FILE: {
    kind: 'string',
    meaning: 'JSON file of hashed API keys for POST /v1/tasks (docs/INGRESS.md; `tao ingress key` makes an entry); read at start',
    usedBy: ['ingress'],
  },
  TAO_INGRESS_API_KEYS: {
    kind: 'secret',
    meaning: 'hashed API key entries inline, the same JSON as the keys file (merged with it; masked as a precaution)',
    usedBy: ['ingress'],
  },
  TAO_INGRESS_AUTH: {
    kind: 'enum',
    values: ['auto', 'on', 'off'],
    default: 'auto',
    meaning:
      'API keys on POST /v1/tasks. auto: enforced when configured; without keys the ingress runs open on a loopback TAO_BIND_HOST only (a WARN line) and refuses to start on any other. on: keys required even on loopback. off: open on purpose (refused alongside keys)',
    usedBy: ['ingress'],
  },
  TAO_WEBHOOK_SECRET_GITHUB: { kind: 'secret', meaning: 'GitHub webhook secret (unset: GitHub deliveries are refused)', usedBy: ['ingress'] },
  TAO_WEBHOOK_SECRET_JIRA: { kind: 'secret', meaning: 'Jira webhook secret (unset: Jira deliveries are refused)', usedBy: ['ingress'] },
  TAO_WEBHOOK_TOLERANCE_S: {
    kind: 'duration',
    default: '5m',
    min: 1000,
    max: 86400000,
    meaning: "accepted age of a Jira delivery's signed timestamp",
    usedBy: ['ingress'],
  },
  TAO_WEBHOOK_DELIVERY_WINDOW_S: {
    kind: 'duration',
    default: '1h',
    min: 1000,
    max: 30 * 86400000,
    meaning: 'how long a delivery id is remembered against duplicates',
    usedBy: ['ingress'],
  },
  TAO_WEBHOOK_JIRA_IGNORE_ACCOUNTS: { kind: 'list', default: '', meaning: "Jira accountIds whose comments are ignored (the agent's own)", usedBy: ['ingress'] },

  // Callbacks
  TAO_CALLBACK_SECRET: {
    kind: 'secret',
    meaning: 'signing secret of outcome callbacks; `run all` starts the dispatcher only when set',
    usedBy: ['callbacks', 'cli'],
  },
  TAO_CALLBACK_ALLOWED_HOSTS: { kind: 'list', default: '', meaning: 'hosts (or host:port) callbacks may be sent to', usedBy: ['callbacks'] },
  TAO_CALLBACK_MAX_ATTEMPTS: { kind: 'int', default: '6', min: 1, max: 100, meaning: 'attempts per callback', usedBy: ['callbacks'] },
  TAO_CALLBACK_TIMEOUT_MS: { kind: 'duration', default: '10s', min: 100, max: 600000, meaning: 'budget of one callback request', usedBy: ['callbacks'] },

  // Operations
  TAO_UI_HOST: {
    kind: 'string',
    default: '127.0.0.1',
    pattern: /^[A-Za-z0-9.:-]+$/,
    hint: 'a host name or IP address',
    meaning:
      'address the operator console binds (`tao ui`; --host wins). Any address but loopback needs an API key with the console scope (TAO_INGRESS_KEYS_FILE / TAO_INGRESS_API_KEYS)',
    usedBy: ['cli'],
  },
  TAO_UI_PORT: { kind: 'port', default: '7088', min: 0, max: 65535, meaning: 'port of the operator console (`tao ui`; --port wins)', usedBy: ['cli'] },
  TAO_STATUS_ENDPOINTS: {
    kind: 'list',
    urlItems: true,
    defaultNote: 'the default stage ports on 127.0.0.1',
    meaning: 'stage ops URLs `tao status` asks for /health',
    usedBy: ['cli'],
  },

  // Local infra
  TAO_INFRA: {
    kind: 'enum',
    values: ['local', 'docker'],
    meaning: 'how npm test starts Kafka and a registry when KAFKA_BROKERS is unset: local (infra/, the default) or docker (testcontainers)',
    usedBy: ['test'],
  },
  TAO_RUN_FROM: {
    kind: 'enum',
    values: ['dist', 'source'],
    defaultNote: 'dist/ when built and current, else the sources through tsx',
    meaning: 'what bin/tao.js runs: the compiled build or the TypeScript sources',
    usedBy: ['all'],
  },
  TAO_INFRA_DIR: { kind: 'string', defaultNote: `.infra ${PACKAGE_PATH}`, meaning: 'cache, data, logs and pid files of `tao infra`', usedBy: ['infra'] },
  TAO_KAFKA_PORT: { kind: 'port', default: '9092', min: 1, max: 65535, meaning: "local broker's listener", usedBy: ['infra'] },
  TAO_CONTROLLER_PORT: { kind: 'port', default: '9093', min: 1, max: 65535, meaning: "local broker's KRaft controller listener", usedBy: ['infra'] },
  TAO_REGISTRY_PORT: { kind: 'port', default: '8081', min: 1, max: 65535, meaning: "local schema registry's port", usedBy: ['infra'] },
  TAO_MODEL_PORT: {
    kind: 'port',
    default: '8091',
    min: 1,
    max: 65535,
    meaning: "port of the local model server (`tao model up`: llama.cpp's llama-server, OpenAI-compatible at http://127.0.0.1:<port>/v1)",
    usedBy: ['infra'],
  },
  TAO_MODEL_CACHE: {
    kind: 'string',
    defaultNote: '$XDG_CACHE_HOME/tao-kafka, else ~/.cache/tao-kafka',
    meaning: '`tao model`: where llama-server is built (once, about 7 min) and the model file is kept, outside the clone so that every clone shares them',
    usedBy: ['infra'],
  },

  // Tests and benchmarks only
  TAO_TEST_MODEL_URL: {
    kind: 'url',
    testOnly: true,
    meaning: 'OpenAI-compatible base URL (ending in /v1) of the local model server, set by npm test for files that declare `test-needs: model`',
    usedBy: ['test'],
  },
  TAO_TEST_MODEL_NAME: { kind: 'string', testOnly: true, meaning: 'the model name to send to TAO_TEST_MODEL_URL, set by npm test with it', usedBy: ['test'] },
  TAO_INTEROP_PYTHON: {
    kind: 'string',
    testOnly: true,
    meaning: 'Python with confluent-kafka for the interop test (npm test creates a venv)',
    usedBy: ['test'],
  },
  TAO_RELAY_SIZES: { kind: 'string', testOnly: true, meaning: 'record sizes of a relay hop (JSON), set by the bench', usedBy: ['bench'] },
  TAO_FALLBACK_TOOL_ORIGIN: {
    kind: 'url',
    testOnly: true,
    meaning: "origin of the fault-mix bench's replica tools, referenced by its catalog",
    usedBy: ['bench'],
  },
  TAO_EVIL_URL: { kind: 'url', testOnly: true, meaning: 'an origin outside the catalog, for the SSRF test', usedBy: ['test'] },
  TAO_TEST_TOOL_TOKEN: { kind: 'secret', testOnly: true, meaning: "a test tool's token, referenced by its catalog", usedBy: ['test'] },
  TAO_LOG_TEST_SECRET: { kind: 'secret', testOnly: true, meaning: 'a header secret the log test expects never to see', usedBy: ['test'] },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

type Parsed<S> = S extends { kind: 'int' | 'number' | 'port' | 'duration' }
  ? number
  : S extends { kind: 'bool' }
    ? boolean
    : S extends { kind: 'list' }
      ? string[]
      : S extends { kind: 'enum'; values: readonly (infer V)[] }
        ? V
        : string;

/** The parsed value of a variable: always present when it has a default, else possibly undefined. */
export type SettingValue<N extends SettingName> = (typeof SETTINGS)[N] extends { default: string }
  ? Parsed<(typeof SETTINGS)[N]>
  : Parsed<(typeof SETTINGS)[N]> | undefined;

const spec = (name: SettingName): SettingSpec => SETTINGS[name];

/** True when the variable is set to a non-empty value. */
export function isSet(env: NodeJS.ProcessEnv, name: SettingName): boolean {
  return (env[name] ?? '') !== '';
}

/**
 * The parsed value of `name` in `env`, or its default.
 * @throws ConfigError with one line naming the variable and the value when the value does not parse.
 */
export function setting<N extends SettingName>(env: NodeJS.ProcessEnv, name: N): SettingValue<N> {
  const raw = env[name];
  const s = spec(name);
  if (raw !== undefined && raw !== '') return parseValue(name, s, raw) as SettingValue<N>;
  return (s.default === undefined ? undefined : parseValue(name, s, s.default)) as SettingValue<N>;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function parseValue(name: string, s: SettingSpec, raw: string): unknown {
  const fail = (what: string): never => {
    throw new ConfigError(`${name} must be ${what}, got ${s.kind === 'secret' ? 'a value that is not shown' : JSON.stringify(raw)}`);
  };
  const text = raw.trim();
  switch (s.kind) {
    case 'string':
    case 'secret':
      if (s.pattern && !s.pattern.test(raw)) fail(s.hint ?? `like ${s.pattern}`);
      return raw;
    case 'int':
    case 'port': {
      const n = /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
      const what = s.kind === 'port' ? `a TCP port from ${s.min} to ${s.max}` : `an integer ${rangeText(s, String)}`;
      if (!Number.isSafeInteger(n) || (s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max)) fail(what);
      return n;
    }
    case 'number': {
      const n = text === '' ? NaN : Number(text);
      if (!Number.isFinite(n) || (s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max)) fail(`a number ${rangeText(s, String)}`);
      return n;
    }
    case 'bool': {
      const v = text.toLowerCase();
      if (v === 'true' || v === '1') return true;
      if (v === 'false' || v === '0') return false;
      return fail('true or false');
    }
    case 'enum': {
      const v = text.toLowerCase();
      if (!s.values!.includes(v)) fail(`one of ${s.values!.join(', ')}`);
      return v;
    }
    case 'url':
      if (!isHttpUrl(text)) fail('an http(s) URL');
      return text.replace(/\/+$/, '');
    case 'duration': {
      const ms = parseDuration(text, name.endsWith('_S') ? 1000 : 1);
      const plain = name.endsWith('_S') ? 'seconds' : 'milliseconds';
      if (ms === null || (s.min !== undefined && ms < s.min) || (s.max !== undefined && ms > s.max))
        fail(`a duration ${rangeText(s, formatDuration)} (like 500ms, 30s, 5m, 7d; a plain number is ${plain})`);
      return ms;
    }
    case 'list': {
      const items = raw
        .split(',')
        .map((i) => i.trim())
        .filter(Boolean);
      for (const item of items) {
        if (s.urlItems && !isHttpUrl(item)) fail('a comma-separated list of http(s) URLs');
        if (s.pattern && !s.pattern.test(item)) fail(`a comma-separated list of ${s.hint}`);
      }
      return items;
    }
  }
}

function rangeText(s: SettingSpec, show: (n: number) => string): string {
  if (s.min !== undefined && s.max !== undefined) return `from ${show(s.min)} to ${show(s.max)}`;
  if (s.min !== undefined) return `>= ${show(s.min)}`;
  if (s.max !== undefined) return `<= ${show(s.max)}`;
  return '';
}

function isHttpUrl(text: string): boolean {
  if (!/^https?:\/\/[^\s/]+/.test(text)) return false;
  return URL.canParse(text);
}

/**
 * Whole milliseconds of `text`: a number with a unit (ms, s, m, h, d) or a plain number taken in
 * `plainUnitMs`. Null when it does not parse, is negative, or is not a whole number of milliseconds.
 */
export function parseDuration(text: string, plainUnitMs: number): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * (m[2] ? DURATION_UNITS[m[2]]! : plainUnitMs);
  return Number.isSafeInteger(ms) ? ms : null;
}

/** Milliseconds in the largest unit that divides them exactly: 604800000 → `7d`, 1500 → `1500ms`. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) if (ms !== 0 && ms % DURATION_UNITS[unit]! === 0) return `${ms / DURATION_UNITS[unit]!}${unit}`;
  return `${ms}ms`;
}

/**
 * Every problem of the environment, one line each: values that do not parse, and `TAO_*` names
 * that are not declared (with the closest declared name). `alsoKnown`: more accepted names (those
 * a tool catalog references, the variables TAO_LLM_API_KEY_ENV and TAO_LLM_FALLBACK_API_KEY_ENV name).
 */
export function environmentProblems(env: NodeJS.ProcessEnv, options: { alsoKnown?: Iterable<string> } = {}): string[] {
  const problems: string[] = [];
  const known = new Set<string>([...Object.keys(SETTINGS), ...(options.alsoKnown ?? [])]);
  for (const keyEnv of [env.TAO_LLM_API_KEY_ENV, env.TAO_LLM_FALLBACK_API_KEY_ENV]) if (keyEnv) known.add(keyEnv);
  for (const name of Object.keys(env).sort()) {
    if (name in SETTINGS) {
      try {
        setting(env, name as SettingName);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        problems.push(err.message);
      }
    } else if (name.startsWith('TAO_') && !known.has(name)) {
      const near = closest(name, Object.keys(SETTINGS));
      problems.push(`${name} is not a known setting${near ? ` (did you mean ${near}?)` : ''}; \`tao config\` lists them all`);
    }
  }
  return problems;
}

/**
 * Start-up check of a process's environment.
 * @throws ConfigError whose message is the problems of {@link environmentProblems}, joined on one line.
 */
export function checkEnvironment(env: NodeJS.ProcessEnv, options: { alsoKnown?: Iterable<string> } = {}): void {
  const problems = environmentProblems(env, options);
  if (problems.length) throw new ConfigError(problems.join('; '));
}

/** The declared name nearest to `name` by edit distance, when it is near enough to be a typo. */
function closest(name: string, candidates: string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return bestDistance <= Math.max(3, Math.floor(name.length / 4)) ? best : null;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/** One line of the effective configuration: the value in force and where it came from; secrets masked. */
export interface EffectiveSetting {
  name: SettingName;
  kind: SettingKind;
  /** The value as set or defaulted (`***` for a set secret); null when unset, or when the default is a note. */
  value: string | null;
  /** The default's description when it is not a value (a path in the package, a per-process port). */
  defaultNote: string | null;
  source: 'env' | 'default' | 'unset';
  secret: boolean;
  meaning: string;
  usedBy: readonly Component[];
}

/**
 * The effective configuration: every declared variable (test/bench-only ones only when set), with
 * secrets shown as `***`. Does not validate; see {@link environmentProblems}.
 */
export function effectiveConfig(env: NodeJS.ProcessEnv): EffectiveSetting[] {
  return (Object.keys(SETTINGS) as SettingName[])
    .filter((name) => !spec(name).testOnly || isSet(env, name))
    .map((name) => {
      const s = spec(name);
      const secret = s.kind === 'secret';
      const fromEnv = isSet(env, name);
      const value = fromEnv ? (secret ? '***' : env[name]!) : (s.default ?? null);
      const source = fromEnv ? 'env' : s.default !== undefined || s.defaultNote ? 'default' : 'unset';
      return { name, kind: s.kind, value, defaultNote: fromEnv ? null : (s.defaultNote ?? null), source, secret, meaning: s.meaning, usedBy: s.usedBy };
    });
}

/**
 * Connection settings shared by every process (see {@link SETTINGS} for each variable).
 */
export interface RuntimeConfig {
  kafka: {
    brokers: string[];
    /** TLS to the brokers (KAFKA_SSL). */
    ssl: boolean;
    /** KAFKA_SSL_CA_FILE: a PEM file of CAs to trust besides the system ones (read by runtime/kafka.ts); null: system CAs only. */
    sslCaFile: string | null;
    /** KAFKA_SSL_REJECT_UNAUTHORIZED: false accepts a certificate that does not verify. */
    sslRejectUnauthorized: boolean;
    sasl: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string } | null;
    sessionTimeoutMs: number;
    startupWaitMs: number;
  };
  registry: { url: string; username: string | null; password: string | null };
  namespace: string;
  /** Address every server of this process binds (TAO_BIND_HOST). */
  bindHost: string;
}

/**
 * Reads and validates the connection settings.
 * @throws ConfigError naming the first variable that does not parse, the SASL settings that are
 *   missing, or a KAFKA_SSL_* setting given without KAFKA_SSL=true.
 */
export function loadRuntimeConfig(env: NodeJS.ProcessEnv): RuntimeConfig {
  const mechanism = setting(env, 'KAFKA_SASL_MECHANISM');
  const username = setting(env, 'KAFKA_SASL_USERNAME');
  const password = setting(env, 'KAFKA_SASL_PASSWORD');
  if (mechanism && (!username || !password)) throw new ConfigError(`KAFKA_SASL_MECHANISM=${mechanism} needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD`);
  const ssl = setting(env, 'KAFKA_SSL');
  const sslCaFile = setting(env, 'KAFKA_SSL_CA_FILE') ?? null;
  const sslRejectUnauthorized = setting(env, 'KAFKA_SSL_REJECT_UNAUTHORIZED');
  if (!ssl && sslCaFile !== null) throw new ConfigError('KAFKA_SSL_CA_FILE is set but KAFKA_SSL is not true: set KAFKA_SSL=true to connect over TLS');
  if (!ssl && !sslRejectUnauthorized)
    throw new ConfigError('KAFKA_SSL_REJECT_UNAUTHORIZED=false is set but KAFKA_SSL is not true: set KAFKA_SSL=true to connect over TLS');
  const brokers = setting(env, 'KAFKA_BROKERS');
  if (brokers.length === 0) throw new ConfigError('KAFKA_BROKERS must name at least one host:port');
  return {
    kafka: {
      brokers,
      ssl,
      sslCaFile,
      sslRejectUnauthorized,
      sasl: mechanism ? { mechanism, username: username!, password: password! } : null,
      sessionTimeoutMs: setting(env, 'TAO_SESSION_TIMEOUT_MS'),
      startupWaitMs: setting(env, 'TAO_STARTUP_WAIT_MS'),
    },
    registry: {
      url: setting(env, 'SCHEMA_REGISTRY_URL'),
      username: setting(env, 'SCHEMA_REGISTRY_USERNAME') ?? null,
      password: setting(env, 'SCHEMA_REGISTRY_PASSWORD') ?? null,
    },
    namespace: setting(env, 'TAO_NAMESPACE'),
    bindHost: setting(env, 'TAO_BIND_HOST'),
  };
}

/** The settings of Action, Observation, the ingress, the callbacks and the operator tools (console, status). Part of the one declaration of settings (runtime/config.ts, `SETTINGS`). */
import { PACKAGE_PATH, type SettingSpec } from './spec.ts';

export const STAGE_SETTINGS = {
  // Action
  TAO_TOOL_CATALOG_DIR: {
    kind: 'string',
    defaultNote: `tools/catalog ${PACKAGE_PATH}`,
    meaning: 'tool catalog folder (docs/TOOLS.md)',
    usedBy: ['thought', 'action', 'observation', 'replay', 'ingress'],
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
  TAO_INGRESS_MAX_IN_FLIGHT: { kind: 'int', default: '1000', min: 1, meaning: 'runs in flight above which the ingress answers 429', usedBy: ['ingress'] },
  TAO_INGRESS_MAX_STREAMS: {
    kind: 'int',
    default: '100',
    min: 1,
    meaning: 'open run event streams (GET /v1/runs/.../events) above which the ingress answers 429',
    usedBy: ['ingress'],
  },
  TAO_INGRESS_STREAM_HEARTBEAT_S: {
    kind: 'int',
    default: '15',
    min: 1,
    meaning: 'seconds between heartbeat comments on an idle run event stream',
    usedBy: ['ingress'],
  },
  TAO_A2A_PUBLIC_URL: {
    kind: 'url',
    meaning:
      "the ingress's public base URL, for the endpoint URL in the A2A agent card (GET /.well-known/agent-card.json; docs/A2A.md); unset: http://<the request's Host header>",
    usedBy: ['ingress'],
  },
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
} as const satisfies Record<string, SettingSpec>;

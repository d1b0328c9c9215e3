/** Kafka, the schema registry and what every process reads (its ports, log level, tracing). Part of the one declaration of settings (runtime/config.ts, `SETTINGS`). */
import { HOST_PORT, type SettingSpec } from './spec.ts';

export const PLATFORM_SETTINGS = {
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
  TAO_KAFKA_MIN_VERSION_CHECK: {
    kind: 'enum',
    values: ['refuse', 'warn', 'off'],
    default: 'refuse',
    meaning:
      "what a starting process does when a broker lacks a request version Kafka 3.9 added (ApiVersions v4, Fetch v17, ListOffsets v9: it is older than 3.9, and exactly-once's fencing read is not exact: it needs 3.9.1, KAFKA-17507): refuse to start (exit 1), warn and start, or not check. A 3.9.0 broker cannot be told from 3.9.1 and passes",
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
  OTEL_SEMCONV_STABILITY_OPT_IN: {
    kind: 'list',
    meaning:
      'comma-separated semantic-convention opt-ins (the OTel spec); gen_ai_latest_experimental: model calls and the tool calls a model asked for get GenAI spans and attributes (pinned version; docs/OBSERVABILITY.md); other values are ignored',
    usedBy: ['action'],
  },
} as const satisfies Record<string, SettingSpec>;

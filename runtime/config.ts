import { Ajv } from 'ajv';
import { ConfigError } from './errors.ts';

/**
 * Connection settings shared by every process, read once at start-up from the environment and
 * validated (unknown or malformed values stop the process with a message naming each problem).
 *
 * | variable | meaning | default |
 * |---|---|---|
 * | KAFKA_BROKERS | comma-separated host:port list | 127.0.0.1:9092 |
 * | KAFKA_SSL | `true` to use TLS | false |
 * | KAFKA_SASL_MECHANISM | plain, scram-sha-256, scram-sha-512 | (none) |
 * | KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD | SASL credentials | |
 * | SCHEMA_REGISTRY_URL | Confluent-compatible registry | http://127.0.0.1:8081 |
 * | SCHEMA_REGISTRY_USERNAME / SCHEMA_REGISTRY_PASSWORD | basic auth | |
 * | TAO_NAMESPACE | prefix for topics and consumer groups (isolates tests and tenants) | (empty) |
 * | TAO_SESSION_TIMEOUT_MS | consumer group session timeout | 10000 |
 * | TAO_STARTUP_WAIT_MS | how long a starting process waits for an unreachable Kafka before it gives up | 120000 |
 */
export interface RuntimeConfig {
  kafka: {
    brokers: string[];
    ssl: boolean;
    sasl: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string } | null;
    sessionTimeoutMs: number;
    startupWaitMs: number;
  };
  registry: { url: string; username: string | null; password: string | null };
  namespace: string;
}

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['kafka', 'registry', 'namespace'],
  properties: {
    kafka: {
      type: 'object',
      additionalProperties: false,
      required: ['brokers', 'ssl', 'sasl', 'sessionTimeoutMs', 'startupWaitMs'],
      properties: {
        brokers: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[^\\s:,]+:[0-9]{1,5}$' } },
        ssl: { type: 'boolean' },
        sasl: {
          oneOf: [
            { type: 'null' },
            {
              type: 'object',
              additionalProperties: false,
              required: ['mechanism', 'username', 'password'],
              properties: {
                mechanism: { enum: ['plain', 'scram-sha-256', 'scram-sha-512'] },
                username: { type: 'string', minLength: 1 },
                password: { type: 'string', minLength: 1 },
              },
            },
          ],
        },
        sessionTimeoutMs: { type: 'integer', minimum: 6000, maximum: 300000 },
        startupWaitMs: { type: 'integer', minimum: 0, maximum: 3600000 },
      },
    },
    registry: {
      type: 'object',
      additionalProperties: false,
      required: ['url', 'username', 'password'],
      properties: {
        url: { type: 'string', pattern: '^https?://' },
        username: { type: ['string', 'null'] },
        password: { type: ['string', 'null'] },
      },
    },
    namespace: { type: 'string', pattern: '^[a-zA-Z0-9_-]*$', maxLength: 64 },
  },
} as const;

const validate = new Ajv({ allErrors: true }).compile<RuntimeConfig>(schema);

/** Reads and validates the runtime configuration; throws {@link ConfigError} listing every problem. */
export function loadRuntimeConfig(env: NodeJS.ProcessEnv = process.env): RuntimeConfig {
  const mechanism = env.KAFKA_SASL_MECHANISM?.toLowerCase();
  const config = {
    kafka: {
      brokers: (env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',').map((b) => b.trim()).filter(Boolean),
      ssl: parseBool(env.KAFKA_SSL, 'KAFKA_SSL'),
      sasl: mechanism ? { mechanism, username: env.KAFKA_SASL_USERNAME ?? '', password: env.KAFKA_SASL_PASSWORD ?? '' } : null,
      sessionTimeoutMs: Number(env.TAO_SESSION_TIMEOUT_MS ?? 10000),
      startupWaitMs: Number(env.TAO_STARTUP_WAIT_MS ?? 120000),
    },
    registry: {
      url: (env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081').replace(/\/+$/, ''),
      username: env.SCHEMA_REGISTRY_USERNAME ?? null,
      password: env.SCHEMA_REGISTRY_PASSWORD ?? null,
    },
    namespace: env.TAO_NAMESPACE ?? '',
  };
  if (!validate(config)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
    throw new ConfigError(`invalid runtime configuration (from KAFKA_*, SCHEMA_REGISTRY_*, TAO_* variables): ${problems}`);
  }
  return config;
}

function parseBool(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

/**
 * Tasks from an existing Kafka topic. A source is declared in a JSON file (`sources/*.json`): the
 * topic, its format (JSON, or Avro in the Confluent wire format through the registry), and how a
 * record maps to a task — a text template of JSON pointers, the pointer of the external id (which
 * makes the run's thought_id, so a re-sent record starts no second run) and metadata pointers.
 *
 * It runs as a stage of the shared runtime (`tao run source <file>`): each task is written to
 * `tao.tasks` in the same transaction as the source offset, and a record that can't be read or
 * mapped goes, with its original bytes and the reason, to `<topic>.dlq`.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { buildTask } from '../client/tasks.ts';
import { valueAt } from '../runtime/json-pointer.ts';
import { ConfigError, ContractViolation, DecodeError, TransientError, errorMessage } from '../runtime/errors.ts';
import type { InputRecord, OutputRecord, StageDefinition } from '../runtime/processor.ts';

export interface SourceConfig {
  /** Names the stage and its consumer group (`tao-source-<name>`). */
  name: string;
  topic: string;
  format: 'json' | 'avro';
  /** The task's `source`; with the external id it determines the thought_id. */
  source: string;
  /** Task text: literal text with `{{/json/pointer}}` placeholders. */
  text: string;
  /** JSON pointer of the record's own id (string or number). */
  externalId: string;
  /** Task metadata: name -> JSON pointer (missing values are left out). */
  metadata?: Record<string, string>;
  /** Dead-letter topic (default `<topic>.dlq`). */
  dlq?: string;
}

const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'topic', 'format', 'source', 'text', 'externalId'],
  properties: {
    name: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,40}$' },
    topic: { type: 'string', minLength: 1 },
    format: { enum: ['json', 'avro'] },
    source: { type: 'string', pattern: '^[a-z0-9][a-z0-9_.-]{0,63}$' },
    text: { type: 'string', minLength: 1 },
    externalId: { type: 'string', pattern: '^(/[^/]*)+$' },
    metadata: { type: 'object', additionalProperties: { type: 'string', pattern: '^(/[^/]*)+$' } },
    dlq: { type: 'string', minLength: 1 },
  },
} as const;

export function loadSourceConfig(path: string): SourceConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${path}: ${errorMessage(err)}`);
  }
  const ajv = new Ajv({ allErrors: true });
  const validate = ajv.compile<SourceConfig>(configSchema);
  if (!validate(raw)) throw new ConfigError(`${path}: ${ajv.errorsText(validate.errors)}`);
  return raw;
}

/**
 * Maps one decoded record to a task, or says exactly why it can't.
 * @throws ContractViolation naming the missing or mistyped field.
 */
export function mapRecord(config: SourceConfig, record: unknown, now: number): ReturnType<typeof buildTask> {
  const scalar = (pointer: string, what: string): string => {
    const v = valueAt(record, pointer);
    if (typeof v === 'string' && v.trim() !== '') return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    throw new ContractViolation(
      `${what} ${pointer} is ${v === undefined ? 'missing' : `not a non-empty string or number (${JSON.stringify(v)?.slice(0, 80)})`}`,
    );
  };
  const externalId = scalar(config.externalId, 'external id');
  const text = config.text.replace(/\{\{(\/[^}]*)\}\}/g, (_, pointer: string) => scalar(pointer, 'text field')).trim();
  const metadata: Record<string, string> = { source_topic: config.topic };
  for (const [name, pointer] of Object.entries(config.metadata ?? {})) {
    const v = valueAt(record, pointer);
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') metadata[name] = String(v);
  }
  return buildTask({ text, source: config.source, external_id: externalId, metadata }, now);
}

/** Decodes a source record by its declared format; bad bytes are DecodeErrors (dead letters). */
export function sourceDecoder(config: SourceConfig, registry: SchemaRegistry): (value: Buffer | null) => Promise<unknown> {
  if (config.format === 'json') {
    return async (value) => {
      if (!value) throw new DecodeError('record has no value');
      const text = value.toString('utf8');
      if (Buffer.compare(Buffer.from(text, 'utf8'), value) !== 0) throw new DecodeError('value is not valid UTF-8');
      try {
        return JSON.parse(text);
      } catch (err) {
        throw new DecodeError(`value is not JSON: ${errorMessage(err)}`);
      }
    };
  }
  return async (value) => {
    if (!value || value.length < 6 || value[0] !== 0) throw new DecodeError('value is not in the Confluent wire format');
    try {
      return await registry.decode(value);
    } catch (err) {
      const status = (err as { status?: number }).status;
      if (status === undefined || status === 404 || status === 422)
        throw new DecodeError(`Avro value does not decode: ${errorMessage(err)}`, { cause: err, unknownSchema: status === 404 });
      throw new TransientError(`schema registry unavailable: ${errorMessage(err)}`, { cause: err });
    }
  };
}

/** The source as a stage: external topic in, `tao.tasks` out, in one transaction with the offset. */
export function sourceStage(config: SourceConfig, registry: SchemaRegistry, now: () => number = Date.now): StageDefinition {
  return {
    stage: `source-${config.name}`,
    inputs: [],
    externalInputs: [{ topic: config.topic, dlq: config.dlq ?? `${config.topic}.dlq`, decode: sourceDecoder(config, registry) }],
    outputs: ['tasks'],
    concurrency: 16,
    maxRecordsPerTransaction: 200,
    maxInputBytes: 1024 * 1024,
    async handle(record: InputRecord): Promise<OutputRecord[]> {
      const task = mapRecord(config, record.value, now());
      task.metadata = { ...task.metadata, source_partition: String(record.partition), source_offset: record.offset };
      return [{ topic: 'tasks', key: task.thought_id, value: task, span: `source:${config.name}` }];
    },
  };
}

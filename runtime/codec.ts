import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import type { RuntimeConfig } from './config.ts';
import { DecodeError, TransientError, errorMessage } from './errors.ts';
import { packagePath } from './paths.ts';
import { TOPICS, topicNames, type TopicId, type TopicNames } from '../topics/catalog.ts';

const SCHEMA_DIR = packagePath('schemas', 'avro');

/** The Avro schema (parsed JSON) of a topic's values, read from schemas/avro/. */
export function readValueSchema(id: TopicId): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMA_DIR, TOPICS[id].valueSchema!), 'utf8')) as Record<string, unknown>;
}

const localTypes = new Map<TopicId, avro.Type>();

/** This code's compiled Avro type of topic `id`'s values, built once per process. */
function localType(id: TopicId): avro.Type {
  let type = localTypes.get(id);
  if (!type) localTypes.set(id, (type = avro.Type.forSchema(readValueSchema(id) as avro.Schema)));
  return type;
}

/**
 * The size `value` has as a record of topic `id` (this code's schema, the 5-byte wire-format header
 * included), without a registry: for checks that measure a record they do not write (replay's
 * verify re-measuring a decision the runner found too large).
 */
export function encodedValueBytes(id: TopicId, value: unknown): number {
  return 5 + localType(id).toBuffer(value).length;
}

export function createRegistry(config: RuntimeConfig): SchemaRegistry {
  const { url, username, password } = config.registry;
  return new SchemaRegistry({ host: url, auth: username && password ? { username, password } : undefined, retry: { retries: 3 } });
}

/**
 * Encodes and decodes the loop's record values in the Confluent wire format (magic byte 0, 4-byte
 * big-endian schema id, Avro binary), registering schemas under `<topic>-value` with BACKWARD
 * compatibility. Decoding resolves the writer's schema (fetched by id) against this code's reader
 * schema, so older and newer compatible writers are read into the shape this code knows.
 */
export class AvroCodec {
  private readonly ids = new Map<TopicId, number>();
  private readonly decoders = new Map<string, (payload: Buffer) => unknown>();
  /** Writer schemas by registry id (an id's schema never changes). */
  private readonly writers = new Map<number, avro.Type>();
  /** Where {@link encode} writes a record before copying it out (encoding is synchronous: calls never share it). */
  private scratch = Buffer.allocUnsafe(16 * 1024);

  constructor(
    readonly registry: SchemaRegistry,
    readonly topics: TopicNames,
  ) {}

  static create(config: RuntimeConfig): AvroCodec {
    return new AvroCodec(createRegistry(config), topicNames(config.namespace));
  }

  /** Registers the value schemas of `ids` (idempotent: the registry returns the existing id for a known schema). */
  async register(ids: readonly TopicId[]): Promise<void> {
    for (const id of ids) {
      const schema = readValueSchema(id);
      const { id: schemaId } = await this.registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
        { subject: `${this.topics.name(id)}-value`, compatibility: 'BACKWARD' as never },
      );
      this.ids.set(id, schemaId);
    }
  }

  /** Encodes `value` for topic `id`; the schema must have been registered by {@link register}. */
  async encode(id: TopicId, value: unknown): Promise<Buffer> {
    const schemaId = this.ids.get(id);
    if (schemaId === undefined) throw new Error(`schema of ${id} not registered by this process (call register first)`);
    // The schema registered under `schemaId` is this code's own schema of `id`: its compiled type
    // writes the same bytes the registry client would, without the client's per-call lookups.
    // Written once, behind the 5-byte header, into a scratch buffer that grows to the largest record
    // seen, then copied out: avsc's toBuffer writes into a 1 KiB buffer and, for a larger record
    // (most of the loop's are 1-2 KiB), allocates a zero-filled one and writes the record again.
    const type = localType(id);
    let end: number;
    try {
      end = type.encode(value, this.scratch, 5);
      if (end < 0) {
        this.scratch = Buffer.allocUnsafe(2 * (this.scratch.length - end));
        end = type.encode(value, this.scratch, 5);
      }
    } catch {
      // The registry client's error names the fields that do not fit the schema.
      return this.registry.encode(schemaId, value);
    }
    this.scratch[0] = 0;
    this.scratch.writeInt32BE(schemaId, 1);
    return Buffer.from(this.scratch.subarray(0, end));
  }

  /**
   * Decodes a value read from topic `id`.
   * @throws DecodeError (dead-letter) for bad framing, an unknown schema id or undecodable Avro;
   *         TransientError when the registry can't be reached (retry, don't dead-letter).
   */
  async decode<T>(id: TopicId, buffer: Buffer | null): Promise<T> {
    if (!buffer || buffer.length < 6 || buffer[0] !== 0) {
      throw new DecodeError(`value is not in the Confluent wire format (${buffer ? `${buffer.length} bytes, first byte ${buffer[0]}` : 'null value'})`);
    }
    const schemaId = buffer.readInt32BE(1);
    const writer = this.writers.get(schemaId) ?? (await this.fetchWriter(schemaId));
    try {
      return this.readerFor(id, schemaId, writer)(buffer.subarray(5)) as T;
    } catch (err) {
      throw new DecodeError(`Avro body does not decode with schema ${schemaId} for ${this.topics.name(id)}: ${errorMessage(err)}`, {
        cause: err,
        details: { schemaId },
      });
    }
  }

  /** The writer schema of registry id `schemaId`, fetched once (see {@link decode} for the errors). */
  private async fetchWriter(schemaId: number): Promise<avro.Type> {
    let writer: avro.Type;
    try {
      writer = (await this.registry.getSchema(schemaId)) as unknown as avro.Type;
    } catch (err) {
      const status = (err as { status?: number }).status;
      if (status === 404 || status === 422)
        throw new DecodeError(`schema id ${schemaId} is unknown to the registry`, { unknownSchema: true, cause: err, details: { schemaId } });
      throw new TransientError(`schema registry unavailable while fetching schema ${schemaId}: ${errorMessage(err)}`, { cause: err });
    }
    this.writers.set(schemaId, writer);
    return writer;
  }

  /** A decoder from writer schema `schemaId` into this code's reader schema, built once per pair. */
  private readerFor(id: TopicId, schemaId: number, writer: avro.Type): (payload: Buffer) => unknown {
    const key = `${id}:${schemaId}`;
    let read = this.decoders.get(key);
    if (!read) {
      const reader = localType(id);
      if (reader.equals(writer)) {
        read = (payload) => reader.fromBuffer(payload);
      } else {
        const resolver = reader.createResolver(writer);
        read = (payload) => reader.fromBuffer(payload, resolver);
      }
      this.decoders.set(key, read);
    }
    return read;
  }
}

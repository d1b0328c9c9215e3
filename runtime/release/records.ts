/**
 * Releases as records of the compacted topic tao.manifests (topics/catalog.ts, schemas/avro/manifest-record.avsc):
 * each published manifest under `manifest:<digest>`, and the release pointer under `release`, the
 * one record every stage instance follows to know which manifest a new run starts on. One
 * partition: a pointer is always read after the manifests it names (publish refuses a digest the
 * log does not hold).
 *
 * The pointer's moves are pure functions ({@link activate}, {@link startRollout}, {@link promote},
 * {@link rollback}); each returns the next pointer, or a one-line refusal.
 */
import type { Kafka, Producer } from 'kafkajs';
import type { AvroCodec } from '../codec.ts';
import { LogReader } from '../log-reader.ts';
import { checkManifest, type Manifest } from './manifest.ts';
import type { ManifestRecord, ReleasePointer } from '../../schemas/types.gen.ts';

export type { ReleasePointer } from '../../schemas/types.gen.ts';

/** The key of the release pointer. */
export const RELEASE_KEY = 'release';
/** The key of a manifest. */
export const manifestKey = (digest: string): string => `manifest:${digest}`;

/** A published manifest: the manifest, when and why it was published. */
export interface PublishedManifest {
  manifest: Manifest;
  publishedAt: number;
  note: string | null;
}

/** What the topic holds: the manifests by digest, and the latest pointer (null before any). */
export interface Releases {
  manifests: Map<string, PublishedManifest>;
  pointer: ReleasePointer | null;
}

/** A move of the pointer: the next pointer, or why it is refused (one line). */
export type Move = { pointer: ReleasePointer } | { refused: string };

const isDigest = (s: string) => /^[0-9a-f]{64}$/.test(s);

/**
 * The digest a user named (the whole digest, or a prefix of at least 8 hex digits that names one
 * published manifest), or a one-line refusal.
 */
export function resolveDigest(releases: Releases, named: string): { digest: string } | { refused: string } {
  const wanted = named.toLowerCase();
  if (!/^[0-9a-f]{8,64}$/.test(wanted)) return { refused: `"${named}" is not a manifest digest (8 to 64 hex digits)` };
  const found = [...releases.manifests.keys()].filter((d) => d.startsWith(wanted));
  if (found.length === 1) return { digest: found[0]! };
  if (found.length > 1) return { refused: `${named} names ${found.length} manifests: give more of the digest` };
  return { refused: `manifest ${named} was never published (tao manifest publish)` };
}

/** Makes `digest` active when no manifest is (the first release of a deployment). */
export function activate(current: ReleasePointer | null, digest: string, now: number, reason = 'activate'): Move {
  if (current?.active) return { refused: `manifest ${current.active.slice(0, 12)} is already active: use tao rollout start and promote` };
  return { pointer: { active: digest, previous: null, candidate: null, percent: 0, changed_at: now, reason } };
}

/** Sends `percent` of new runs to `digest`; the active manifest takes the others. */
export function startRollout(current: ReleasePointer | null, digest: string, percent: number, now: number, reason = ''): Move {
  if (!current?.active) return { refused: 'no manifest is active: publish one with --activate first' };
  if (!Number.isInteger(percent) || percent < 0 || percent > 100) return { refused: `--percent must be a whole number from 0 to 100, got ${percent}` };
  if (digest === current.active) return { refused: `manifest ${digest.slice(0, 12)} is the active one` };
  return { pointer: { ...current, candidate: digest, percent, changed_at: now, reason: `rollout start ${percent}%${reason ? `: ${reason}` : ''}` } };
}

/** The candidate becomes active; the active one becomes previous (what rollback returns to). */
export function promote(current: ReleasePointer | null, now: number, reason = ''): Move {
  if (!current?.candidate) return { refused: 'no rollout to promote (tao rollout start first)' };
  return {
    pointer: {
      active: current.candidate,
      previous: current.active,
      candidate: null,
      percent: 0,
      changed_at: now,
      reason: `promote${reason ? `: ${reason}` : ''}`,
    },
  };
}

/**
 * One step back: a rollout in progress ends (every new run on the active manifest); otherwise the
 * previous manifest becomes active again.
 */
export function rollback(current: ReleasePointer | null, now: number, reason = ''): Move {
  const why = `rollback${reason ? `: ${reason}` : ''}`;
  if (current?.candidate) return { pointer: { ...current, candidate: null, percent: 0, changed_at: now, reason: why } };
  if (!current?.previous) return { refused: 'nothing to roll back to: no rollout in progress and no previous manifest' };
  return { pointer: { active: current.previous, previous: null, candidate: null, percent: 0, changed_at: now, reason: why } };
}

/** The digests a pointer names (each must be published before the pointer is written). */
export const namedDigests = (p: ReleasePointer): string[] => [p.active, p.previous, p.candidate].filter((d): d is string => d !== null);

/**
 * A record of the topic, decoded and checked: a manifest whose content does not match its digests
 * (see checkManifest) or whose key does not name it, is refused.
 * @throws the codec's DecodeError, or a ConfigError naming what does not match.
 */
export async function decodeReleaseRecord(
  codec: AvroCodec,
  key: string,
  value: Buffer,
): Promise<{ kind: 'manifest'; published: PublishedManifest } | { kind: 'release'; pointer: ReleasePointer } | null> {
  const record = await codec.decode<ManifestRecord>('manifests', value);
  if (key === RELEASE_KEY && record.release) return { kind: 'release', pointer: record.release };
  if (key.startsWith('manifest:') && record.manifest) {
    const { published_at, note, ...rest } = record.manifest;
    const manifest = rest as Manifest;
    checkManifest(manifest);
    if (key !== manifestKey(manifest.digest)) throw new Error(`record ${key} holds manifest ${manifest.digest}`);
    return { kind: 'manifest', published: { manifest, publishedAt: Number(published_at), note } };
  }
  return null;
}

/** Reads the whole topic (read_committed) to its current end: every manifest, the latest pointer. */
export async function readReleases(kafka: Kafka, codec: AvroCodec): Promise<Releases> {
  const topic = codec.topics.name('manifests');
  const reader = await LogReader.connect(kafka, codec.topics.group('manifests-reader'));
  const releases: Releases = { manifests: new Map(), pointer: null };
  try {
    const ranges = (await reader.offsets(topic)).map((p) => ({ topic, partition: p.partition, from: p.low, to: p.high }));
    for (const r of await reader.read(ranges)) {
      if (r.key === null || r.value === null) continue;
      const read = await decodeReleaseRecord(codec, r.key, r.value);
      if (read?.kind === 'manifest') releases.manifests.set(read.published.manifest.digest, read.published);
      else if (read?.kind === 'release') releases.pointer = read.pointer;
    }
  } finally {
    await reader.close();
  }
  return releases;
}

/** The record value of a published manifest. */
export function manifestValue(m: Manifest, publishedAt: number, note: string | null): ManifestRecord {
  return { manifest: { ...m, intent_model: m.intent_model, published_at: publishedAt, note }, release: null };
}

/**
 * Writes manifests then the pointer, in that order, in one send to the topic's one partition: a
 * reader never meets the pointer before the manifests it names. The codec must have registered 'manifests'.
 */
export async function writeReleaseRecords(
  producer: Producer,
  codec: AvroCodec,
  records: { manifests?: readonly { manifest: Manifest; note: string | null }[]; pointer?: ReleasePointer },
  now: number,
): Promise<void> {
  const messages: { key: string; value: Buffer }[] = [];
  for (const m of records.manifests ?? [])
    messages.push({ key: manifestKey(m.manifest.digest), value: await codec.encode('manifests', manifestValue(m.manifest, now, m.note)) });
  if (records.pointer) {
    if (!namedDigests(records.pointer).every(isDigest)) throw new Error('a release pointer names digests only');
    messages.push({ key: RELEASE_KEY, value: await codec.encode('manifests', { manifest: null, release: records.pointer } satisfies ManifestRecord) });
  }
  if (messages.length) await producer.send({ topic: codec.topics.name('manifests'), messages, acks: -1 });
}

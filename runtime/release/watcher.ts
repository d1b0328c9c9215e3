/**
 * A stage's view of the releases: follows tao.manifests (read_committed, from the beginning, for as
 * long as the stage runs) and keeps every manifest read and the release pointer. The pointer a
 * stage acts on is the latest one whose manifests it has all read and checked: one naming a digest
 * whose record it has not consumed yet (or that failed its check) waits, and the one before stays in
 * force, so no run starts on a manifest the stage does not hold whole.
 */
import { createHash } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../codec.ts';
import { errorMessage, TransientError } from '../errors.ts';
import { followFromBeginning, type Follower } from '../follow.ts';
import type { Logger } from '../log.ts';
import type { Manifest } from './manifest.ts';
import { decodeReleaseRecord, namedDigests, type ReleasePointer } from './records.ts';

/** The bucket (0-99) of a run: a stable hash of its id, the same on every instance. */
export function runBucket(thoughtId: string): number {
  return createHash('sha256').update(thoughtId).digest().readUInt32BE(0) % 100;
}

/** The manifest a new run starts on under `pointer`: the candidate for `percent` of the buckets, else the active one (null: no release recorded). */
export function pickManifest(pointer: ReleasePointer | null, thoughtId: string): string | null {
  if (!pointer?.active) return null;
  return pointer.candidate && runBucket(thoughtId) < pointer.percent ? pointer.candidate : pointer.active;
}

export class ReleaseWatcher {
  private readonly manifests = new Map<string, Manifest>();
  private latest: ReleasePointer | null = null;
  private inForce: ReleasePointer | null = null;
  private readonly waiters = new Set<() => void>();
  private follower: Follower | null = null;

  private constructor(
    private readonly codec: AvroCodec,
    private readonly logger: Logger,
  ) {}

  /** Starts following tao.manifests; resolves once the topic is read to the end it had at start. */
  static async start(kafka: Kafka, codec: AvroCodec, logger: Logger): Promise<ReleaseWatcher> {
    const watcher = new ReleaseWatcher(codec, logger);
    watcher.follower = await followFromBeginning(kafka, [codec.topics.name('manifests')], {
      groupPrefix: codec.topics.group('releases'),
      onMessage: (_, __, message) => watcher.apply(message.key?.toString('utf8') ?? '', message.value, message.offset),
      onStopped: (err) => logger.error('release watcher stopped: new runs keep the release in force', { error: err }),
    });
    await watcher.follower.reachedEnd;
    return watcher;
  }

  /** The release pointer in force: the latest whose manifests have all been read (null: none recorded). */
  pointer(): ReleasePointer | null {
    return this.inForce;
  }

  manifest(digest: string): Manifest | undefined {
    return this.manifests.get(digest);
  }

  /**
   * The manifest `digest`, once read: a run's record may name one this instance has not consumed yet.
   * @throws TransientError (the record is retried) when it is not read within `timeoutMs`.
   */
  async waitForManifest(digest: string, timeoutMs: number): Promise<Manifest> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.manifests.get(digest);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new TransientError(`manifest ${digest.slice(0, 12)} is not in tao.manifests yet (waited ${timeoutMs} ms)`);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, 1000));
        this.waiters.add(done);
      });
    }
  }

  async stop(): Promise<void> {
    await this.follower?.stop();
    this.follower = null;
  }

  private async apply(key: string, value: Buffer | null, offset: string): Promise<void> {
    if (value === null) return;
    let read;
    try {
      read = await decodeReleaseRecord(this.codec, key, value);
    } catch (err) {
      this.logger.warn('release record refused: not applied', { key, offset, error: errorMessage(err) });
      return;
    }
    if (read?.kind === 'manifest') {
      this.manifests.set(read.published.manifest.digest, read.published.manifest);
      for (const wake of [...this.waiters]) wake();
    } else if (read?.kind === 'release') this.latest = read.pointer;
    const latest = this.latest;
    if (latest && latest !== this.inForce && namedDigests(latest).every((d) => this.manifests.has(d))) {
      this.inForce = latest;
      this.logger.info('release in force', {
        active: latest.active,
        candidate: latest.candidate,
        percent: latest.percent,
        reason: latest.reason,
        changed_at: Number(latest.changed_at),
        offset,
      });
    } else if (latest && latest !== this.inForce && read?.kind === 'release') {
      this.logger.warn('release pointer names a manifest not read yet: the one before stays in force', {
        missing: namedDigests(latest).filter((d) => !this.manifests.has(d)),
      });
    }
  }
}

/**
 * A stage's configuration per release (docs/RELEASES.md, "What pins a run"): the release watcher
 * (runtime/release/watcher.ts) follows tao.manifests, and each manifest a run names is written back
 * as a release folder (materialize) whose variables, laid over the deployment's, build the stage's
 * configuration for it, once per digest. The deployment's own manifest (its parts and settings) is
 * computed at start: runs start on it while no release is recorded, and Thought publishes it so
 * replay finds it.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../../runtime/codec.ts';
import { withProducer } from '../../runtime/kafka.ts';
import type { Logger } from '../../runtime/log.ts';
import { releaseEnv } from '../../runtime/release/folder.ts';
import { manifestOf, materialize, type Manifest } from '../../runtime/release/manifest.ts';
import { writeReleaseRecords } from '../../runtime/release/records.ts';
import { pickManifest, ReleaseWatcher } from '../../runtime/release/watcher.ts';
import { DEFAULT_SYSTEM_RULES } from '../thought/model/prompt.ts';

/** Where manifests are written back as release folders, one per digest. */
export const CACHE_DIR = join(tmpdir(), `tao-releases-${process.getuid?.() ?? 'user'}`);
/** How long a record naming a manifest this instance has not read yet waits for it before it is retried. */
const MANIFEST_WAIT_MS = 30_000;

/** A stage's configurations by release. */
export class StageReleases<C> {
  readonly deployment: Manifest;
  private watcher: ReleaseWatcher | null = null;
  private readonly configs = new Map<string, Promise<C>>();

  /**
   * @param build the stage's configuration from an environment, for release `digest`.
   * @throws ConfigError when the deployment's own parts do not make a manifest.
   */
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly build: (env: NodeJS.ProcessEnv, digest: string) => Promise<C>,
  ) {
    this.deployment = manifestOf(env, DEFAULT_SYSTEM_RULES);
    // The deployment's configuration is built at start, so a bad setting stops the process there.
    this.configs.set(this.deployment.digest, build(env, this.deployment.digest));
  }

  /** The deployment's configuration (built at start). */
  deploymentConfig(): Promise<C> {
    return this.configs.get(this.deployment.digest)!;
  }

  /**
   * Starts the watcher and waits until it has read tao.manifests to its end. With `publish`
   * (Thought), writes the deployment's manifest when the topic does not hold it, so runs made on
   * it can be replayed. Resolves with what stops the watcher.
   */
  async prepare(io: { kafka: Kafka; codec: AvroCodec; logger: Logger }, publish: boolean): Promise<() => Promise<void>> {
    const watcher = await ReleaseWatcher.start(io.kafka, io.codec, io.logger);
    this.watcher = watcher;
    if (publish && !watcher.manifest(this.deployment.digest)) {
      await io.codec.register(['manifests']);
      await withProducer(io.kafka, (producer) =>
        writeReleaseRecords(producer, io.codec, { manifests: [{ manifest: this.deployment, note: 'deployment (published by Thought at start)' }] }, Date.now()),
      );
    }
    const pointer = watcher.pointer();
    io.logger.info('releases read', { deployment: this.deployment.digest, active: pointer?.active ?? null, candidate: pointer?.candidate ?? null });
    return () => watcher.stop();
  }

  /** The manifest a new run starts on: by the pointer in force, or the deployment's while none is recorded. */
  pickForNewRun(thoughtId: string): string {
    return pickManifest(this.watcher?.pointer() ?? null, thoughtId) ?? this.deployment.digest;
  }

  /**
   * The configuration of release `digest` (null: a run recorded before runs named one, which runs on
   * the deployment's), built once per digest.
   * @throws TransientError when the manifest is not read within 30 s (the record is retried).
   */
  async forRelease(digest: string | null): Promise<C> {
    const key = digest ?? this.deployment.digest;
    let config = this.configs.get(key);
    if (!config) {
      const manifest = this.watcher?.manifest(key) ?? (await this.requireWatcher().waitForManifest(key, MANIFEST_WAIT_MS));
      config = this.configs.get(key);
      if (!config) {
        const folder = materialize(manifest, CACHE_DIR);
        config = this.build({ ...this.env, ...releaseEnv(folder) }, key);
        // A build that fails is not kept: the next record naming the digest tries again.
        config.catch(() => this.configs.delete(key));
        this.configs.set(key, config);
      }
    }
    return config;
  }

  private requireWatcher(): ReleaseWatcher {
    if (!this.watcher) throw new Error('StageReleases.prepare was not called');
    return this.watcher;
  }
}

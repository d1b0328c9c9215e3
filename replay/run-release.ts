/**
 * `replay --verify` re-decides a run with the release it was made on (docs/RELEASES.md): the
 * manifest its records name (RunState.manifest, Outcome.manifest), read from tao.manifests and
 * written back as a release folder whose variables, laid over the shell's, build the configurations
 * (replay/verify-config.ts). A run recorded before runs named a manifest is re-decided with the
 * shell's configuration, as before.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { DEFAULT_SYSTEM_RULES } from '../processors/thought/model/prompt.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { errorMessage } from '../runtime/errors.ts';
import { releaseEnv } from '../runtime/release/folder.ts';
import { materialize, sha256 } from '../runtime/release/manifest.ts';
import { readReleases } from '../runtime/release/records.ts';
import type { ObservationResult, Outcome, RunSnapshot, ThoughtRequest } from '../schemas/types.gen.ts';
import type { RunLog } from './log.ts';
import type { VerifyConfigs } from './verify.ts';
import { verifyConfigsForRun } from './verify-config.ts';

/** The manifest digest the run's records name, or null (a run recorded before the field, or without releases). */
export function recordedManifest(log: RunLog): string | null {
  for (const r of log.records) {
    if (r.value === null) continue;
    const named =
      r.topic === 'thoughtRequests' || r.topic === 'actionResults' || r.topic === 'observationResults'
        ? (r.value as unknown as ThoughtRequest | ObservationResult).run.manifest
        : r.topic === 'outcomes'
          ? (r.value as unknown as Outcome).manifest
          : r.topic === 'thoughtRuns'
            ? (r.value as unknown as RunSnapshot).manifest
            : null;
    if (named) return named;
  }
  return null;
}

/**
 * The configurations to verify `log` with: those of the run's own manifest where tao.manifests
 * holds it (a note says which), the shell's otherwise (a note says why).
 */
export async function verifyConfigsForRelease(log: RunLog, env: NodeJS.ProcessEnv, deps: { kafka: Kafka; codec: AvroCodec }): Promise<VerifyConfigs> {
  const digest = recordedManifest(log);
  if (!digest) return verifyConfigsForRun(log, env);
  let published;
  let unread: string | null = null;
  try {
    published = (await readReleases(deps.kafka, deps.codec)).manifests.get(digest);
  } catch (err) {
    unread = errorMessage(err);
  }
  const short = digest.slice(0, 12);
  if (!published) {
    const configs = await verifyConfigsForRun(log, env);
    configs.thought.manifest = digest;
    const why = unread ? `tao.manifests could not be read (${unread})` : 'tao.manifests does not hold it';
    return { ...configs, notes: [...(configs.notes ?? []), `the run was made on manifest ${short}, and ${why}: re-decided with today's configuration`] };
  }
  const folder = materialize(published.manifest, join(tmpdir(), `tao-releases-${process.getuid?.() ?? 'user'}`));
  const configs = await verifyConfigsForRun(log, { ...env, ...releaseEnv(folder) });
  configs.thought.manifest = digest;
  const notes = [...(configs.notes ?? []), `re-decided with the run's manifest ${short} (tao.manifests)`];
  if (published.manifest.system_rules.sha256 !== sha256(DEFAULT_SYSTEM_RULES))
    notes.push(`manifest ${short} was made with other system rules than this code's: model turns are re-decided with this code's`);
  return { ...configs, notes };
}

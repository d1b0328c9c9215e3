/**
 * `tao manifest publish|list|show` and `tao rollout start|status|promote|rollback`: releases as
 * records of tao.manifests (runtime/release/records.ts, docs/RELEASES.md). Each command reads the
 * topic to its end, then writes at most one send (manifests first, then the pointer). A digest that
 * was never published, or a move the pointer does not allow, is one line on stderr and exit 1.
 */
import { parseArgs } from 'node:util';
import type { Kafka } from 'kafkajs';
import { AvroCodec } from '../runtime/codec.ts';
import { loadRuntimeConfig } from '../runtime/config.ts';
import { ConfigError } from '../runtime/errors.ts';
import { createKafka, withProducer } from '../runtime/kafka.ts';
import { createLogger } from '../runtime/log.ts';
import { manifestOf, manifestOfFolder, type Manifest } from '../runtime/release/manifest.ts';
import {
  activate,
  promote,
  readReleases,
  resolveDigest,
  rollback,
  startRollout,
  writeReleaseRecords,
  type Move,
  type ReleasePointer,
  type Releases,
} from '../runtime/release/records.ts';
import { DEFAULT_SYSTEM_RULES } from '../processors/thought/model/prompt.ts';
import { checkRelease } from '../processors/wiring/check-release.ts';
import { rolloutRates, renderRates } from '../observability/release-rates.ts';
import { MANIFEST_USAGE, ROLLOUT_USAGE } from './release-usage.ts';

/** Runs `tao manifest` or `tao rollout`; resolves with the exit code. */
export async function releaseCommand(command: 'manifest' | 'rollout', args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const usage = command === 'manifest' ? MANIFEST_USAGE : ROLLOUT_USAGE;
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        folder: { type: 'string' },
        activate: { type: 'boolean', default: false },
        note: { type: 'string' },
        percent: { type: 'string' },
        reason: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    console.error(`tao ${command}: ${(err as Error).message}\n${usage}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(usage);
    return 0;
  }
  const [sub, ...rest] = parsed.positionals;
  const wrong = (problem: string) => (console.error(`tao ${command}: ${problem}\n${usage}`), 2);
  const subs = command === 'manifest' ? ['publish', 'list', 'show'] : ['start', 'status', 'promote', 'rollback'];
  if (!sub || !subs.includes(sub)) return wrong(sub ? `unknown ${command} command "${sub}"` : `needs one of ${subs.join(', ')}`);
  const needsDigest = sub === 'show' || sub === 'start';
  if (needsDigest ? rest.length !== 1 : rest.length) return wrong(needsDigest ? `${sub} takes one digest` : `${sub} takes no arguments`);
  const v = parsed.values;
  let percent = 0;
  if (sub === 'start') {
    if (v.percent === undefined || !/^\d+$/.test(v.percent) || Number(v.percent) > 100)
      return wrong(`--percent must be a whole number from 0 to 100${v.percent === undefined ? '' : `, got "${v.percent}"`}`);
    percent = Number(v.percent);
  }

  const config = loadRuntimeConfig(env);
  const logger = createLogger({ command }, { level: 'warn' });
  const kafka = createKafka(config, `tao-${command}`, logger);
  const codec = AvroCodec.create(config);
  const releases = await readReleases(kafka, codec);
  const now = Date.now();
  const named = () => resolveDigest(releases, rest[0]!);

  switch (sub) {
    case 'publish': {
      let manifest: Manifest;
      const known = (digest: string) => releases.manifests.has(digest);
      try {
        manifest = v.folder === undefined ? manifestOf(env, DEFAULT_SYSTEM_RULES) : manifestOfFolder(v.folder, env, DEFAULT_SYSTEM_RULES);
        // A release the stages could not load is refused here, not met by every run it would start.
        if (!known(manifest.digest)) await checkRelease(manifest, env);
      } catch (err) {
        if (err instanceof ConfigError) return refuse(command, err.message);
        throw err;
      }
      const alreadyPublished = known(manifest.digest);
      const move = v.activate && !releases.pointer?.active ? activate(releases.pointer, manifest.digest, now) : null;
      if (move && 'refused' in move) return refuse(command, move.refused);
      await write(
        kafka,
        codec,
        { manifests: alreadyPublished ? [] : [{ manifest, note: v.note ?? (v.folder ? `folder ${v.folder}` : 'deployment') }], pointer: move?.pointer },
        now,
      );
      console.log(manifest.digest);
      if (alreadyPublished) console.error(`manifest ${manifest.digest.slice(0, 12)} was already published`);
      if (v.activate && !move) console.error(`not activated: manifest ${releases.pointer!.active!.slice(0, 12)} is active (use tao rollout start)`);
      return 0;
    }
    case 'list':
      for (const line of listLines(releases)) console.log(line);
      return 0;
    case 'show': {
      const found = named();
      if ('refused' in found) return refuse(command, found.refused);
      console.log(JSON.stringify(summary(releases.manifests.get(found.digest)!.manifest), null, 2));
      return 0;
    }
    case 'start': {
      const found = named();
      if ('refused' in found) return refuse(command, found.refused);
      return movePointer(kafka, codec, startRollout(releases.pointer, found.digest, percent, now, v.reason ?? ''), now, command);
    }
    case 'promote':
      return movePointer(kafka, codec, promote(releases.pointer, now, v.reason ?? ''), now, command);
    case 'rollback':
      return movePointer(kafka, codec, rollback(releases.pointer, now, v.reason ?? ''), now, command);
    default: {
      const rates = await rolloutRates(kafka, codec);
      if (v.json) console.log(JSON.stringify({ pointer: releases.pointer, manifests: rates }, null, 2));
      else for (const line of [pointerLine(releases.pointer), ...renderRates(rates, releases.pointer)]) console.log(line);
      return 0;
    }
  }
}

function refuse(command: string, problem: string): 1 {
  console.error(`tao ${command}: ${problem}`);
  return 1;
}

async function write(kafka: Kafka, codec: AvroCodec, records: Parameters<typeof writeReleaseRecords>[2], now: number): Promise<void> {
  if (!records.manifests?.length && !records.pointer) return;
  await codec.register(['manifests']);
  await withProducer(kafka, (producer) => writeReleaseRecords(producer, codec, records, now));
}

async function movePointer(kafka: Kafka, codec: AvroCodec, move: Move, now: number, command: string): Promise<number> {
  if ('refused' in move) return refuse(command, move.refused);
  await write(kafka, codec, { pointer: move.pointer }, now);
  console.log(pointerLine(move.pointer));
  return 0;
}

const short = (d: string | null) => (d ? d.slice(0, 12) : '-');

function pointerLine(p: ReleasePointer | null): string {
  if (!p) return 'release: none recorded (each stage runs its deployment manifest)';
  return `release: active ${short(p.active)}, candidate ${short(p.candidate)} at ${p.percent}%, previous ${short(p.previous)} (${p.reason}, ${new Date(Number(p.changed_at)).toISOString()})`;
}

function listLines(releases: Releases): string[] {
  const p = releases.pointer;
  const role = (d: string) => (d === p?.active ? 'active' : d === p?.candidate ? `candidate ${p.percent}%` : d === p?.previous ? 'previous' : '');
  return [...releases.manifests.values()]
    .sort((a, b) => a.publishedAt - b.publishedAt)
    .map(
      ({ manifest: m, publishedAt, note }) =>
        `${m.digest}  ${new Date(publishedAt).toISOString()}  ${role(m.digest).padEnd(14)} ${m.skills.map((s) => s.label).join(' ')}${note ? `  (${note})` : ''}`,
    );
}

/** A manifest without its files' content: what `show` prints. */
function summary(m: Manifest) {
  return {
    digest: m.digest,
    skills: m.skills,
    settings: m.settings,
    system_rules: m.system_rules.sha256,
    intent_model: m.intent_model,
    parts: m.parts.map((p) => ({
      name: p.name,
      digest: p.digest,
      files: p.files.map((f) => ({ path: f.path, sha256: f.sha256, bytes: Buffer.byteLength(f.content) })),
    })),
  };
}

/**
 * Rollouts under chaos (`npm run chaos -- --rollouts`, docs/RELEASES.md): three releases are
 * published in the chaos namespace before its stages start (the deployment's, activated, and two
 * candidates: its skills with one prompt line changed and another iteration bound, so the digests
 * differ and a run decided by the wrong release shows it), and while stage instances are SIGKILLed
 * the release pointer is moved through them with `tao rollout start|promote|rollback`: one move right
 * before each kill (so the kill lands while the stages apply it) and one halfway between kills.
 *
 * Then the committed log (read_committed) is checked, run by run ({@link checkRunManifests}):
 * - the run's manifest was published whole (its record checks) before the run's first record that
 *   names it, and some pointer written before that record routes the run to it (the candidate for
 *   the run's bucket below the pointer's percent, else the active one): no run starts on an unknown
 *   digest, one never pointed at, or a half-applied pointer;
 * - every record of the run (waves, results, verdicts, snapshots, outcome) names that manifest, and
 *   every wave carries that manifest's iteration bound: runs keep their release through pointer
 *   moves and kills, and are decided by it.
 */
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { releaseCommand } from '../../cli/release-command.ts';
import type { AvroCodec } from '../../runtime/codec.ts';
import { errorMessage } from '../../runtime/errors.ts';
import { releaseSources } from '../../runtime/release/release-config.ts';
import { decodeReleaseRecord, readReleases, type ReleasePointer } from '../../runtime/release/records.ts';
import { pickManifest } from '../../runtime/release/watcher.ts';
import type { Kafka } from 'kafkajs';
import type { DecodedRecord } from './loop-log.ts';
import type { RawRecord } from '../../eval/namespace.ts';
import { sleep } from './harness.ts';

/** A kill counts as landing during a pointer move when it is at most this long after the move's write. */
export const MOVE_OVERLAP_MS = 2000;

/** The candidates' iteration bounds (the deployment's is the default, 10): above it, so no run ends sooner on a candidate. */
const CANDIDATES = [
  { name: 'candidate-a', maxIterations: 12, line: 'Keep the reply to two sentences (chaos candidate a).' },
  { name: 'candidate-b', maxIterations: 11, line: 'Name the order id in the first sentence (chaos candidate b).' },
] as const;

/** The planned kinds of move, in turn; a kind the pointer does not allow now is passed over. */
const PLAN = ['start', 'promote', 'start', 'rollback', 'rollback'] as const;
type MoveKind = (typeof PLAN)[number];

/** One pointer move as the driver made it. */
export interface PointerMove {
  kind: MoveKind;
  /** When the command started and when it returned (the pointer record is written in between). */
  startedAt: number;
  at: number;
  /** The command's answer: the pointer it wrote, or why it failed. */
  ok: boolean;
  line: string;
}

/** What the chaos report says of the rollouts. */
export interface RolloutReport {
  /** Each published release, by the name the driver gave it, with the runs whose outcome names it. */
  manifests: Array<{ name: string; digest: string; runs: number }>;
  moves: { total: number; failed: number; byKind: Record<string, number> };
  /** Kills within {@link MOVE_OVERLAP_MS} after a pointer move, by stage. */
  killsDuringMoves: { total: number; byStage: Record<string, number> };
  /** Runs checked, and every breach of the checks above (none expected). */
  checkedRuns: number;
  violations: string[];
}

/** Runs `tao manifest|rollout` in this process (the command users run); its stdout, or an error with its stderr. */
export async function tao(command: 'manifest' | 'rollout', args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = (...a: unknown[]) => void out.push(a.join(' '));
  console.error = (...a: unknown[]) => void err.push(a.join(' '));
  let code;
  try {
    code = await releaseCommand(command, args, env);
  } finally {
    [console.log, console.error] = [log, error];
  }
  if (code !== 0) throw new Error(`tao ${command} ${args.join(' ')} exited ${code}: ${err.join(' ')}`);
  return out.join('\n').trim();
}

/** The rollout driver of a chaos run: its releases, and the pointer moves it made. */
export class RolloutDriver {
  readonly moves: PointerMove[] = [];
  private planned = 0;
  private starts = 0;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly kafka: Kafka,
    private readonly codec: AvroCodec,
    /** name → digest: the deployment first, then the candidates. */
    readonly releases: ReadonlyMap<string, string>,
    private readonly folders: string[],
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Publishes the deployment's release of `env` (activated) and the two candidates. Call it before
   * the stages start, so every run starts under a recorded pointer.
   */
  static async prepare(env: NodeJS.ProcessEnv, io: { kafka: Kafka; codec: AvroCodec; log: (line: string) => void }): Promise<RolloutDriver> {
    const releases = new Map<string, string>([['deployment', await tao('manifest', ['publish', '--activate', '--note', 'chaos deployment'], env)]]);
    const folders: string[] = [];
    try {
      for (const c of CANDIDATES) {
        const folder = candidateFolder(env, c.line, c.maxIterations);
        folders.push(folder);
        releases.set(c.name, await tao('manifest', ['publish', '--folder', folder, '--note', `chaos ${c.name}`], env));
      }
    } catch (err) {
      for (const f of folders) rmSync(f, { recursive: true, force: true });
      throw err;
    }
    io.log(`chaos: releases ${[...releases].map(([n, d]) => `${n} ${d.slice(0, 12)}`).join(', ')}`);
    return new RolloutDriver(env, io.kafka, io.codec, releases, folders, io.log);
  }

  /** Makes the next pointer move (one at a time: two moves at once could lose one). */
  move(): Promise<PointerMove> {
    const next = this.queue.then(() => this.moveNow());
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Sleeps `ms` with a pointer move halfway. */
  async pace(ms: number): Promise<void> {
    const started = Date.now();
    await sleep(ms / 2);
    await this.move();
    await sleep(Math.max(0, ms - (Date.now() - started)));
  }

  /** The report, from the committed log: `raw` holds every record of the namespace's loop topics and tao.manifests. */
  async report(
    raw: readonly RawRecord[],
    records: readonly DecodedRecord[],
    ids: ReadonlySet<string>,
    kills: ReadonlyArray<{ stage: string; at: number }>,
  ): Promise<RolloutReport> {
    const topic = this.codec.topics.name('manifests');
    const log: ReleaseLogEntry[] = [];
    for (const r of raw.filter((x) => x.topic === topic && x.value !== null).sort((a, b) => Number(a.offset) - Number(b.offset))) {
      try {
        const read = await decodeReleaseRecord(this.codec, r.key, r.value!);
        if (read?.kind === 'release') log.push({ at: r.timestamp, pointer: read.pointer });
        else if (read?.kind === 'manifest') {
          const bound = read.published.manifest.settings.TAO_MAX_ITERATIONS;
          log.push({ at: r.timestamp, manifest: { digest: read.published.manifest.digest, maxIterations: bound === undefined ? null : Number(bound) } });
        }
      } catch (err) {
        log.push({ at: r.timestamp, refused: `${r.key}: ${errorMessage(err)}` });
      }
    }
    const checked = checkRunManifests(log, runManifestRecords(records), ids);
    const byKind: Record<string, number> = {};
    for (const m of this.moves.filter((x) => x.ok)) byKind[m.kind] = (byKind[m.kind] ?? 0) + 1;
    const overlapping = kills.filter((k) => this.moves.some((m) => m.ok && k.at >= m.startedAt && k.at <= m.at + MOVE_OVERLAP_MS));
    const byStage: Record<string, number> = {};
    for (const k of overlapping) byStage[k.stage] = (byStage[k.stage] ?? 0) + 1;
    return {
      manifests: [...this.releases].map(([name, digest]) => ({ name, digest, runs: checked.runsByManifest[digest] ?? 0 })),
      moves: { total: this.moves.length, failed: this.moves.filter((m) => !m.ok).length, byKind },
      killsDuringMoves: { total: overlapping.length, byStage },
      checkedRuns: checked.checkedRuns,
      violations: checked.violations,
    };
  }

  cleanup(): void {
    for (const f of this.folders) rmSync(f, { recursive: true, force: true });
  }

  private async moveNow(): Promise<PointerMove> {
    const startedAt = Date.now();
    let kind: MoveKind = PLAN[this.planned % PLAN.length]!;
    try {
      const { pointer } = await readReleases(this.kafka, this.codec);
      // The next planned kind the pointer allows now (a failed move may have left it elsewhere).
      for (let i = 0; i < PLAN.length; i++) {
        kind = PLAN[this.planned++ % PLAN.length]!;
        if (kind === 'start' ? !pointer?.candidate : kind === 'promote' ? Boolean(pointer?.candidate) : Boolean(pointer?.candidate ?? pointer?.previous)) break;
      }
      let args: string[];
      if (kind === 'start') {
        const others = [...this.releases.values()].filter((d) => d !== pointer?.active);
        args = ['start', others[this.starts % others.length]!, '--percent', String(this.starts++ % 2 ? 60 : 30), '--reason', 'chaos'];
      } else args = [kind, '--reason', 'chaos'];
      const line = await tao('rollout', args, this.env);
      const move = { kind, startedAt, at: Date.now(), ok: true, line };
      this.moves.push(move);
      return move;
    } catch (err) {
      this.log(`chaos: pointer move ${kind} failed: ${errorMessage(err)}`);
      const move = { kind, startedAt, at: Date.now(), ok: false, line: errorMessage(err) };
      this.moves.push(move);
      return move;
    }
  }
}

/** A release folder: the deployment's skills with `line` added to the first skill's SKILL.md, and `maxIterations` as its bound. */
function candidateFolder(env: NodeJS.ProcessEnv, line: string, maxIterations: number): string {
  const folder = mkdtempSync(join(tmpdir(), 'tao-chaos-release-'));
  const skills = join(folder, 'skills');
  cpSync(releaseSources(env).paths.skills, skills, { recursive: true });
  const first = readdirSync(skills, { withFileTypes: true }).find((e) => e.isDirectory())!.name;
  const file = join(skills, first, 'SKILL.md');
  writeFileSync(file, `${readFileSync(file, 'utf8').trimEnd()}\n${line}\n`);
  writeFileSync(join(folder, 'settings.json'), JSON.stringify({ TAO_MAX_ITERATIONS: maxIterations }));
  return folder;
}

/** A record of tao.manifests in log order: a manifest that checks, a pointer, or a record that does not check. */
export interface ReleaseLogEntry {
  /** The record's CreateTime (ms). */
  at: number;
  manifest?: { digest: string; maxIterations: number | null };
  pointer?: ReleasePointer;
  refused?: string;
}

/** A record of a run that names its manifest (null: the field is empty). */
export interface RunManifestRecord {
  run: string;
  what: string;
  /** When its writer sent it (CreateTime); null for a snapshot, which carries its input's time (stream time), not its own. */
  at: number | null;
  manifest: string | null;
  /** A wave's iteration bound (RunState.max_iterations), for waves only. */
  maxIterations?: number;
}

/** The records of the loop that name a run's manifest: waves, results, verdicts, snapshots (and their run state), outcomes. */
export function runManifestRecords(records: readonly DecodedRecord[]): RunManifestRecord[] {
  const out: RunManifestRecord[] = [];
  for (const r of records) {
    const v = r.decoded as Record<string, unknown> | null;
    if (!v) continue;
    const run = v.run as { manifest: string | null; max_iterations: number } | null | undefined;
    const at = r.timestamp;
    const what = `${r.id}${typeof v.iteration === 'number' ? ` ${v.iteration}` : ''}`;
    if (r.id === 'thoughtRequests') out.push({ run: r.key, what, at, manifest: run!.manifest, maxIterations: run!.max_iterations });
    else if (r.id === 'actionResults' || r.id === 'observationResults') out.push({ run: r.key, what, at, manifest: run!.manifest });
    else if (r.id === 'outcomes') out.push({ run: r.key, what, at, manifest: v.manifest as string | null });
    else if (r.id === 'thoughtRuns') {
      out.push({ run: r.key, what: `snapshot ${String(v.status)}`, at: null, manifest: v.manifest as string | null });
      if (run) out.push({ run: r.key, what: `snapshot ${String(v.status)} run`, at: null, manifest: run.manifest });
    }
  }
  return out;
}

/**
 * The rollout checks of the runs `ids` against the release log (see the file's header). A run is
 * named in at most one violation per check; `runsByManifest` counts runs by the manifest they name.
 */
export function checkRunManifests(
  log: readonly ReleaseLogEntry[],
  records: readonly RunManifestRecord[],
  ids: ReadonlySet<string>,
): { checkedRuns: number; runsByManifest: Record<string, number>; violations: string[] } {
  const byRun = new Map<string, RunManifestRecord[]>();
  for (const r of records) if (ids.has(r.run)) byRun.set(r.run, [...(byRun.get(r.run) ?? []), r]);
  const violations: string[] = [];
  const runsByManifest: Record<string, number> = {};
  const short = (d: string) => d.slice(0, 12);
  for (const [run, own] of [...byRun].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const named = [...new Set(own.map((r) => r.manifest))];
    const digest = own.find((r) => r.manifest !== null)?.manifest ?? null;
    if (named.length > 1 || digest === null) {
      violations.push(`${run}: its records name ${named.map((d) => (d === null ? 'no manifest' : short(d))).join(' and ')} (${describe(own)})`);
      if (digest === null) continue;
    }
    runsByManifest[digest] = (runsByManifest[digest] ?? 0) + 1;
    // The run's first record that names it, by its writer's clock (snapshots carry their input's time).
    const first = Math.min(...own.flatMap((r) => (r.manifest === digest && r.at !== null ? [r.at] : [])));
    const before = log.filter((e) => e.at <= first);
    const published = before.find((e) => e.manifest?.digest === digest)?.manifest;
    if (!published) {
      const later = log.some((e) => e.manifest?.digest === digest);
      violations.push(`${run}: starts on manifest ${short(digest)}, ${later ? 'published only after its first record' : 'never published whole'}`);
      continue;
    }
    const pointers = before.flatMap((e) => (e.pointer ? [e.pointer] : []));
    // With no pointer recorded yet a run starts on the deployment's release, which Thought publishes.
    if (pointers.length > 0 && !pointers.some((p) => pickManifest(p, run) === digest))
      violations.push(`${run}: starts on manifest ${short(digest)}, which no pointer written before its first record routed it to`);
    const bound = published.maxIterations;
    const off = own.filter((r) => r.maxIterations !== undefined && bound !== null && r.maxIterations !== bound);
    if (off.length)
      violations.push(
        `${run}: ${off.map((r) => `${r.what} carries iteration bound ${r.maxIterations}`).join(', ')}; its manifest ${short(digest)} says ${bound}`,
      );
  }
  return { checkedRuns: byRun.size, runsByManifest, violations };
}

function describe(own: readonly RunManifestRecord[]): string {
  return own.map((r) => `${r.what}: ${r.manifest === null ? '-' : r.manifest.slice(0, 12)}`).join(', ');
}

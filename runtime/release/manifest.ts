/**
 * A manifest: one release as one record (docs/RELEASES.md). It carries every file of each part of a
 * release folder (runtime/release/folder.ts) with its sha256, the effective run settings and the
 * system rules, and the digest of what is too big to carry (the intent-router model). Its digest,
 * the sha256 of a canonical form of the parts' digests and the settings, is the release id: the same
 * release gives the same digest wherever it is computed.
 *
 * `materialize` writes a manifest back as a release folder, so `releaseEnv(materialize(m, dir))`
 * builds the stages' configuration of that release.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../errors.ts';
import { releaseEnv } from './folder.ts';
import { MANIFEST_PARTS, releaseSources, type ManifestPartName } from './release-config.ts';

export { MANIFEST_PARTS, type ManifestPartName } from './release-config.ts';

/** One file of a part: its path inside the part (`/`-separated), sha256 (hex) and text. */
export interface ManifestFile {
  path: string;
  sha256: string;
  content: string;
}

export interface ManifestPart {
  name: ManifestPartName;
  /** sha256 of the part's canonical file list (path and sha256 of each file). */
  digest: string;
  files: ManifestFile[];
}

/** A skill of the release: its digest (its version) and its human label, name@metadata.version. */
export interface ManifestSkill {
  name: string;
  label: string;
  digest: string;
}

export interface Manifest {
  /** The release id: sha256 of {@link canonicalForm}. */
  digest: string;
  parts: ManifestPart[];
  skills: ManifestSkill[];
  /** The effective run settings: each run setting's value, or its default (unset without a default: absent). */
  settings: Record<string, string>;
  system_rules: { sha256: string; content: string };
  /** The intent-router model folder's digest (TAO_INTENT_MODEL_DIR), carried as a digest only; null without a model folder. */
  intent_model: string | null;
}

/** The largest manifest a record may carry (the broker refuses a record over 1 MiB by default). */
export const MAX_MANIFEST_BYTES = 900 * 1024;

/** Where each part goes in a release folder (runtime/release/folder.ts). */
const FOLDER_PATHS: Record<ManifestPartName, string> = {
  skills: 'skills',
  catalog: 'catalog',
  flows: 'flows',
  routes: join('flows', 'routes.json'),
  'observation-rules': 'observation-rules.json',
};
const FILE_PARTS: readonly ManifestPartName[] = ['routes', 'observation-rules'];

export const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** JSON with object keys sorted at every level: the one text a digest is taken of. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** What the manifest digest is taken of: each part's digest, the settings, the system rules' and the intent model's digests. */
export function canonicalForm(m: Omit<Manifest, 'digest'>): string {
  return canonicalJson({
    parts: Object.fromEntries(m.parts.map((p) => [p.name, p.digest])),
    settings: m.settings,
    system_rules: m.system_rules.sha256,
    intent_model: m.intent_model,
  });
}

const filesDigest = (files: readonly Pick<ManifestFile, 'path' | 'sha256'>[]): string =>
  sha256(canonicalJson([...files].sort((a, b) => (a.path < b.path ? -1 : 1)).map((f) => [f.path, f.sha256])));

/**
 * The manifest of the release `env` stands for: each part at its effective path (its variable, or
 * the default), the effective run settings, the system rules (Thought's, DEFAULT_SYSTEM_RULES: the
 * caller passes them, runtime/ does not import processors/) and the intent model's digest.
 * @throws ConfigError (one line) for a part that is missing or not text, or a manifest too big to be a record.
 */
export function manifestOf(env: NodeJS.ProcessEnv, systemRules: string): Manifest {
  const sources = releaseSources(env);
  const parts: ManifestPart[] = MANIFEST_PARTS.map((name) => {
    const path = sources.paths[name];
    // A part the deployment does not have (no skills folder for a graph planner) is a part without files.
    const files = !existsSync(path)
      ? []
      : FILE_PARTS.includes(name)
        ? [textFile(path, name === 'routes' ? 'routes.json' : 'observation-rules.json')]
        : folderFiles(path, name);
    return { name, digest: filesDigest(files), files };
  });
  const { settings, intentModelDir: intentDir } = sources;
  const body: Omit<Manifest, 'digest'> = {
    parts,
    skills: skillsOf(parts.find((p) => p.name === 'skills')!.files),
    settings,
    system_rules: { sha256: sha256(systemRules), content: systemRules },
    intent_model: existsSync(intentDir) ? folderDigest(intentDir) : null,
  };
  const manifest = { digest: sha256(canonicalForm(body)), ...body };
  const size = Buffer.byteLength(JSON.stringify(manifest));
  if (size > MAX_MANIFEST_BYTES)
    throw new ConfigError(`the release is ${Math.round(size / 1024)} KiB of text, more than a manifest carries (${MAX_MANIFEST_BYTES / 1024} KiB)`);
  return manifest;
}

/** The manifest of a release folder: its parts and settings laid over the deployment's (`env`). */
export function manifestOfFolder(folder: string, env: NodeJS.ProcessEnv, systemRules: string): Manifest {
  return manifestOf({ ...env, ...releaseEnv(folder) }, systemRules);
}

/**
 * Checks that a manifest read from a record is whole: every file's sha256, every part's digest and
 * the manifest's own digest match what they name. A stage never runs a manifest that fails it.
 * @throws ConfigError naming the first thing that does not match.
 */
export function checkManifest(m: Manifest): void {
  const names = m.parts.map((p) => p.name as string);
  if (names.length !== MANIFEST_PARTS.length || MANIFEST_PARTS.some((n) => !names.includes(n)))
    throw new ConfigError(`manifest ${m.digest}: its parts must be ${MANIFEST_PARTS.join(', ')}, got ${names.join(', ')}`);
  for (const part of m.parts) {
    for (const f of part.files)
      if (sha256(f.content) !== f.sha256) throw new ConfigError(`manifest ${m.digest}: ${part.name}/${f.path} does not match its sha256`);
    if (filesDigest(part.files) !== part.digest) throw new ConfigError(`manifest ${m.digest}: part ${part.name} does not match its digest`);
  }
  if (sha256(m.system_rules.content) !== m.system_rules.sha256) throw new ConfigError(`manifest ${m.digest}: the system rules do not match their sha256`);
  if (sha256(canonicalForm(m)) !== m.digest) throw new ConfigError(`manifest ${m.digest}: its parts do not match its digest`);
}

/**
 * Writes `m` as a release folder under `cacheDir` (`<cacheDir>/<digest>`; one already there is
 * reused) and returns its path: `releaseEnv` of it builds the configuration of that release. The
 * folder appears whole or not at all (written aside, then renamed).
 * @throws ConfigError when the manifest does not check (see {@link checkManifest}).
 */
export function materialize(m: Manifest, cacheDir: string): string {
  const target = join(resolve(cacheDir), m.digest);
  if (existsSync(join(target, 'settings.json'))) return target;
  checkManifest(m);
  const scratch = `${target}.${process.pid}.${Date.now()}.tmp`;
  rmSync(scratch, { recursive: true, force: true });
  for (const part of m.parts) {
    const base = join(scratch, FOLDER_PATHS[part.name]);
    for (const f of part.files) {
      const path = FILE_PARTS.includes(part.name) ? base : join(base, ...f.path.split('/'));
      if (!resolve(path).startsWith(resolve(scratch) + sep)) throw new ConfigError(`manifest ${m.digest}: ${part.name}/${f.path} leaves the folder`);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, f.content);
    }
    // A folder part without files is still the release's (an empty catalog), not the deployment's.
    if (!FILE_PARTS.includes(part.name)) mkdirSync(base, { recursive: true });
  }
  writeFileSync(join(scratch, 'settings.json'), `${JSON.stringify(m.settings, null, 2)}\n`);
  try {
    renameSync(scratch, target);
  } catch (err) {
    // Another process materialized the same digest first: its folder is the same.
    rmSync(scratch, { recursive: true, force: true });
    if (!existsSync(join(target, 'settings.json'))) throw err;
  }
  return target;
}

function textFile(path: string, name: string): ManifestFile {
  if (!existsSync(path) || !statSync(path).isFile()) throw new ConfigError(`release part ${path}: no such file`);
  const bytes = readFileSync(path);
  const content = bytes.toString('utf8');
  if (!Buffer.from(content, 'utf8').equals(bytes)) throw new ConfigError(`release part ${path}: not UTF-8 text (a manifest carries text files only)`);
  return { path: name, sha256: sha256(bytes), content };
}

/** Every file under `dir` (dot-files skipped), paths `/`-separated and sorted; the flows part leaves routes.json to the routes part. */
function folderFiles(dir: string, part: ManifestPartName): ManifestFile[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new ConfigError(`release part ${dir}: no such folder`);
  return walk(dir)
    .map((path) => relative(dir, path).split(sep).join('/'))
    .filter((rel) => !(part === 'flows' && rel === 'routes.json'))
    .sort()
    .map((rel) => textFile(join(dir, ...rel.split('/')), rel));
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => !e.name.startsWith('.'))
    .flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

/** sha256 of a folder's files (path and sha256 of each), whatever their content. */
function folderDigest(dir: string): string {
  return filesDigest(walk(dir).map((path) => ({ path: relative(dir, path).split(sep).join('/'), sha256: sha256(readFileSync(path)) })));
}

/** Each skill (a sub-folder of the skills part): the digest of its files, and name@metadata.version as its label. */
function skillsOf(files: readonly ManifestFile[]): ManifestSkill[] {
  const byName = new Map<string, ManifestFile[]>();
  for (const f of files) {
    const [name, ...rest] = f.path.split('/');
    if (!rest.length) continue;
    byName.set(name!, [...(byName.get(name!) ?? []), { ...f, path: rest.join('/') }]);
  }
  return [...byName.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, own]) => {
      const version = /^metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+version:\s*["']?([^"'\n]+?)["']?\s*$/m.exec(own.find((f) => f.path === 'SKILL.md')?.content ?? '');
      return { name, label: `${name}@${version?.[1] ?? '?'}`, digest: filesDigest(own) };
    });
}

/** A manifest's short form: the release id's first 12 hex digits. */
export const shortDigest = (digest: string): string => digest.slice(0, 12);

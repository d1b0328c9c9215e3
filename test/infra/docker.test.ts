import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { loadTestcontainers, type TestcontainersModule } from '../../infra/docker.ts';
import { InfraError } from '../../infra/local.ts';
import { parseInfraMode, startInfra } from '../../infra/mode.ts';

// A module outside this package's node_modules: importing testcontainers from it fails exactly as
// it does in a production install (`npm ci --omit=dev`), where testcontainers is absent.
const outside = mkdtempSync(join(tmpdir(), 'tao-no-testcontainers-'));
writeFileSync(join(outside, 'probe.mjs'), "export const load = () => import('testcontainers');\n");
const importWithoutTestcontainers = async () =>
  ((await import(pathToFileURL(join(outside, 'probe.mjs')).href)) as { load: () => Promise<TestcontainersModule> }).load();
after(() => rmSync(outside, { recursive: true, force: true }));

/** A loopback port that nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('docker mode where testcontainers is not installed says how to install it', async () => {
  await assert.rejects(startInfra('docker', { env: process.env, importer: importWithoutTestcontainers, log: () => undefined }), (err: unknown) => {
    assert.ok(err instanceof InfraError);
    assert.equal(err.code, 'PREREQUISITE_MISSING');
    assert.equal(err.message, 'install testcontainers (npm i -D testcontainers) to use --docker');
    return true;
  });
});

test('a missing package inside testcontainers is not mistaken for testcontainers being absent', async () => {
  const broken = Object.assign(new Error("Cannot find package 'dockerode' imported from /x/node_modules/testcontainers/build/index.js"), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
  await assert.rejects(
    loadTestcontainers(() => Promise.reject(broken)),
    (err) => err === broken,
  );
});

test('`tao infra up --docker` with no Docker engine answering exits 1 with one line naming the engine it tried', async () => {
  const dockerHost = `tcp://127.0.0.1:${await closedPort()}`;
  const result = await promisify(execFile)(process.execPath, [TAO_BIN, 'infra', 'up', '--docker'], {
    env: { ...process.env, DOCKER_HOST: dockerHost },
    timeout: 60000,
  }).then(
    () => assert.fail('infra up --docker succeeded without a Docker engine'),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
  assert.equal(result.code, 1);
  const lines = result.stderr.trim().split('\n');
  assert.equal(lines.length, 1, result.stderr);
  assert.match(
    lines[0]!,
    new RegExp(`^tao: Docker engine not reachable: .*DOCKER_HOST=${dockerHost} did not answer.*npx tao infra up.*\\[PREREQUISITE_MISSING\\]$`),
  );
  assert.doesNotMatch(result.stdout, /KAFKA_BROKERS=/);
});

test('TAO_INFRA is local (also when unset) or docker; anything else is refused naming the variable and the value', async () => {
  assert.equal(parseInfraMode(undefined), 'local');
  assert.equal(parseInfraMode(''), 'local');
  assert.equal(parseInfraMode('docker'), 'docker');
  assert.throws(() => parseInfraMode('podman'), { name: 'InfraError', message: 'TAO_INFRA must be local or docker, not "podman"' });
  await assert.rejects(startInfra('Docker', { env: process.env }), { message: 'TAO_INFRA must be local or docker, not "Docker"' });
});

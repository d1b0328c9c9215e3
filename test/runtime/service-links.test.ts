/**
 * Kubernetes service links in a process's environment: a release named `tao` makes kubelet inject
 * `TAO_TAO_KAFKA_<SERVICE>_*` into every pod (unless enableServiceLinks is false). The start-up check
 * ignores exactly what kubelet writes, name and value, and keeps refusing typos of settings; a
 * declared setting a link overwrote is refused, saying so. Then `tao run observation` itself: it
 * gets past the check with the links set, and still exits 1 on a typo. No broker needed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { environmentProblems } from '../../runtime/config.ts';
import { serviceLinkNames } from '../../runtime/service-links.ts';

/** What kubelet writes for a Service (pkg/kubelet/envvars: FromServices, makeLinkVariables). */
function kubeletLinks(service: string, ip: string, ports: Array<{ name?: string; port: number; protocol?: string }>): Record<string, string> {
  const p = service.toUpperCase().replace(/-/g, '_');
  const hostPort = (port: number) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);
  const env: Record<string, string> = { [`${p}_SERVICE_HOST`]: ip, [`${p}_SERVICE_PORT`]: String(ports[0]!.port) };
  for (const sp of ports) if (sp.name) env[`${p}_SERVICE_PORT_${sp.name.toUpperCase().replace(/-/g, '_')}`] = String(sp.port);
  ports.forEach((sp, i) => {
    const proto = (sp.protocol ?? 'TCP').toLowerCase();
    if (i === 0) env[`${p}_PORT`] = `${proto}://${hostPort(sp.port)}`;
    const pp = `${p}_PORT_${sp.port}_${proto.toUpperCase()}`;
    Object.assign(env, { [pp]: `${proto}://${hostPort(sp.port)}`, [`${pp}_PROTO`]: proto, [`${pp}_PORT`]: String(sp.port), [`${pp}_ADDR`]: ip });
  });
  return env;
}

describe("the start-up check ignores Kubernetes' service links, and only them", () => {
  test('every variable kubelet writes for the Services of a release named tao (IPv4 and IPv6, several ports) is ignored', () => {
    const env = {
      ...kubeletLinks('tao-tao-kafka-ingress', '10.96.0.17', [{ name: 'http', port: 80 }]),
      ...kubeletLinks('tao-tao-kafka-tools', 'fd00:10:96::a', [
        { name: 'http', port: 7070 },
        { name: 'dns-udp', port: 53, protocol: 'UDP' },
      ]),
      ...kubeletLinks('tao-schema-registry', '10.96.0.3', [{ port: 8081 }]),
    };
    assert.ok(Object.keys(env).length >= 20);
    assert.deepEqual(environmentProblems(env), []);
    assert.deepEqual([...serviceLinkNames(env)].sort(), Object.keys(env).sort());
  });

  test('typos of settings are still refused, also beside service links, and names with a link shape but not its value', () => {
    const links = kubeletLinks('tao-tao-kafka-ingress', '10.96.0.17', [{ name: 'http', port: 80 }]);
    const problems = environmentProblems({
      ...links,
      TAO_PLANER: 'react',
      // A typo of TAO_INGRESS_PORT: a `_PORT` name, but not the value kubelet writes.
      TAO_INGRES_PORT: '8080',
      // No `TAO_TAO_KAFKA_CALLBACKS_SERVICE_HOST` beside it: not a Service's link.
      TAO_TAO_KAFKA_CALLBACKS_PORT: 'tcp://10.96.0.18:80',
      // The right prefix, the wrong address or port.
      TAO_TAO_KAFKA_INGRESS_PORT_80_TCP_ADDR: '10.96.0.99',
      TAO_TAO_KAFKA_INGRESS_PORT_81_TCP: 'tcp://10.96.0.17:80',
      TAO_TAO_KAFKA_INGRESS_SERVICE_PORT_HTTP: 'http',
    });
    assert.deepEqual(
      problems.map((p) => p.split(' ')[0]),
      [
        'TAO_INGRES_PORT',
        'TAO_PLANER',
        'TAO_TAO_KAFKA_CALLBACKS_PORT',
        'TAO_TAO_KAFKA_INGRESS_PORT_80_TCP_ADDR',
        'TAO_TAO_KAFKA_INGRESS_PORT_81_TCP',
        'TAO_TAO_KAFKA_INGRESS_SERVICE_PORT_HTTP',
      ],
    );
    assert.match(problems[0]!, /did you mean TAO_INGRESS_PORT\?/);
    assert.match(problems[1]!, /did you mean TAO_PLANNER\?/);
    assert.deepEqual(environmentProblems({ TAO_FOO_SERVICE_HOST: 'not-an-ip' }).length, 1, 'a _SERVICE_HOST that is no IP address is no link');
  });

  test('a declared setting a Service named like it overwrote is refused, and the message says what set it', () => {
    // A Service named `tao-ingress` in the namespace: kubelet writes TAO_INGRESS_PORT=tcp://... into every pod.
    const problems = environmentProblems(kubeletLinks('tao-ingress', '10.96.0.20', [{ name: 'http', port: 80 }]));
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^TAO_INGRESS_PORT must be a TCP port .*got "tcp:\/\/10\.96\.0\.20:80" \(a Kubernetes service link .*enableServiceLinks: false/);
  });
});

describe('tao run observation with the links of a release named tao', () => {
  const run = async (env: NodeJS.ProcessEnv) => {
    try {
      await promisify(execFile)(process.execPath, [TAO_BIN, 'run', 'observation'], { env, timeout: 60000 });
      return { code: 0, stderr: '' };
    } catch (err) {
      const e = err as { code: number; stderr: string };
      return { code: e.code, stderr: e.stderr };
    }
  };
  // The broker is a closed port (the unit layer's): the process gets past the check of its
  // environment and fails later, on the broker, which names KAFKA_BROKERS instead.
  const base = { PATH: process.env.PATH, KAFKA_BROKERS: '127.0.0.1:9', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9', TAO_STARTUP_WAIT_MS: '0' };

  test('gets past the start-up check (the issue: it exited 1 naming TAO_TAO_KAFKA_INGRESS_SERVICE_HOST)', { timeout: 90000 }, async () => {
    const r = await run({ ...base, TAO_TAO_KAFKA_INGRESS_SERVICE_HOST: '10.0.0.1', TAO_TAO_KAFKA_INGRESS_PORT: 'tcp://10.0.0.1:8080' });
    assert.doesNotMatch(r.stderr, /TAO_TAO_KAFKA_INGRESS|not a known setting/);
    assert.match(r.stderr, /KAFKA_BROKERS|127\.0\.0\.1:9/, r.stderr);
  });

  test('still exits 1 on a typo, naming it', { timeout: 90000 }, async () => {
    const r = await run({ ...base, TAO_TAO_KAFKA_INGRESS_SERVICE_HOST: '10.0.0.1', TAO_PLANER: 'react' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /TAO_PLANER is not a known setting \(did you mean TAO_PLANNER\?\)/);
  });
});

/**
 * What a kubelet and a container runtime would make of rendered manifests, for the deployment tests
 * that have no cluster: a container's environment (the image's ENV, the Services' links, the
 * ConfigMap, its own env and Secret keys, in kubelet's order of precedence), the service-link
 * variables of a Service (pkg/kubelet/envvars), and the image's entrypoint and environment as
 * deploy/Containerfile declares them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string> | null;
};

export const manifests = (yaml: string): Manifest[] =>
  parseAllDocuments(yaml)
    .map((d) => d.toJS() as Manifest)
    .filter(Boolean);

/**
 * A Deployment's or Job's container environment as the kubelet gives it: `envFrom` ConfigMaps, then
 * `env` (values, and Secret keys resolved). Without the image's ENV and the service links: see
 * {@link podEnvironment}.
 */
export function containerEnv(all: Manifest[], workload: Manifest): { env: NodeJS.ProcessEnv; container: any } {
  const container = workload.spec.template.spec.containers[0];
  const secretData = (name: string): Record<string, string> | undefined => {
    const s = all.find((m) => m.kind === 'Secret' && m.metadata.name === name);
    if (!s) return undefined;
    return { ...Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()])), ...(s.stringData ?? {}) };
  };
  const env: NodeJS.ProcessEnv = {};
  for (const from of container.envFrom ?? []) {
    const cm = all.find((m) => m.kind === 'ConfigMap' && m.metadata.name === from.configMapRef?.name);
    assert.ok(cm, `ConfigMap ${from.configMapRef?.name} is rendered`);
    Object.assign(env, cm.data ?? {});
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      const data = secretData(ref.name);
      assert.ok(data, `Secret ${ref.name} (for ${e.name}) is rendered`);
      if (data[ref.key] !== undefined) env[e.name] = data[ref.key];
      else assert.equal(ref.optional, true, `${e.name}: a missing key must be optional`);
    }
  }
  return { env, container };
}

/** A Service as the cluster would have it: its name, a cluster IP, its ports. */
export interface ClusterService {
  name: string;
  clusterIP: string;
  ports: Array<{ name?: string; port: number; protocol?: string }>;
}

/** kubelet's makeEnvVariableName: upper case, `-` to `_`. */
const envName = (s: string) => s.toUpperCase().replace(/-/g, '_');

/**
 * The variables kubelet writes into a pod for each Service (pkg/kubelet/envvars FromServices):
 * `<NAME>_SERVICE_HOST`, `_SERVICE_PORT` (the first port), `_SERVICE_PORT_<PORTNAME>` (named
 * ports), and the Docker-link ones: `<NAME>_PORT` (the first port), `_PORT_<port>_<PROTO>` and its
 * `_PROTO`, `_PORT`, `_ADDR`.
 */
export function serviceLinks(services: readonly ClusterService[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const svc of services) {
    const p = envName(svc.name);
    const hostPort = (port: number) => (svc.clusterIP.includes(':') ? `[${svc.clusterIP}]:${port}` : `${svc.clusterIP}:${port}`);
    env[`${p}_SERVICE_HOST`] = svc.clusterIP;
    env[`${p}_SERVICE_PORT`] = String(svc.ports[0]!.port);
    for (const sp of svc.ports) if (sp.name) env[`${p}_SERVICE_PORT_${envName(sp.name)}`] = String(sp.port);
    svc.ports.forEach((sp, i) => {
      const proto = (sp.protocol ?? 'TCP').toLowerCase();
      if (i === 0) env[`${p}_PORT`] = `${proto}://${hostPort(sp.port)}`;
      const pp = `${p}_PORT_${sp.port}_${proto.toUpperCase()}`;
      env[pp] = `${proto}://${hostPort(sp.port)}`;
      env[`${pp}_PROTO`] = proto;
      env[`${pp}_PORT`] = String(sp.port);
      env[`${pp}_ADDR`] = svc.clusterIP;
    });
  }
  return env;
}

/** The final stage of deploy/Containerfile: its ENTRYPOINT, WORKDIR and ENV. */
export function imageSpec(): { entrypoint: string[]; workdir: string; env: Record<string, string> } {
  const text = readFileSync(join(PACKAGE_ROOT, 'deploy', 'Containerfile'), 'utf8');
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => !l.startsWith('#'));
  const last = lines
    .map((l, i) => (/^FROM /.test(l) ? i : -1))
    .filter((i) => i >= 0)
    .at(-1)!;
  const stage = lines.slice(last);
  const entry = stage.find((l) => l.startsWith('ENTRYPOINT '));
  assert.ok(entry, 'the image has an ENTRYPOINT');
  const workdir =
    stage
      .find((l) => l.startsWith('WORKDIR '))
      ?.slice('WORKDIR '.length)
      .trim() ?? '/';
  const env: Record<string, string> = {};
  for (const l of stage.filter((s) => s.startsWith('ENV '))) {
    for (const m of l.slice(4).matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) env[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1');
  }
  return { entrypoint: JSON.parse(entry.slice('ENTRYPOINT '.length)) as string[], workdir, env };
}

/**
 * The environment a pod's container starts with: the image's ENV, overridden by what kubelet gives
 * (`containerEnv`, which wins over the service links: kubelet adds a link only where the container
 * defines no variable of that name).
 */
export function podEnvironment(image: Record<string, string>, links: Record<string, string>, own: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...image, ...links, ...own };
}

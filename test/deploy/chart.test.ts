// test-needs: helm
/**
 * The Helm chart (deploy/helm/tao-kafka), rendered with its default values and with the SASL_SSL +
 * KEDA example (deploy/helm/examples/sasl-ssl-keda.yaml): `helm lint`, `helm template` for the
 * oldest and newest Kubernetes the schema package covers, every manifest validated by kubeconform
 * against the Kubernetes JSON schemas offline (deploy/prepare.js) and the ScaledObject and
 * TriggerAuthentication against deploy/helm/schemas/; a bad manifest is refused. Then each process's
 * rendered environment (ConfigMap, its own env, its Secret keys) goes through the project's own
 * configuration checks, as the process would run them at start: the start-up check of every `tao`
 * command (also with the service links kubelet would add for the release's Services, which every
 * pod turns off), the connection settings, each stage's definition (planner, catalog, flows, rules,
 * models), 0.0.0.0 only where a probe or Service reaches a port, the ingress's API keys there, the
 * callback dispatcher's options. test/deploy/chart-run.test.ts then runs the rendered containers.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { callbackOptionsFromEnv } from '../../callbacks/config.ts';
import { checkStartupEnvironment } from '../../cli/config-command.ts';
import { generatedFacts } from '../../deploy/gen-chart.ts';
import { ingressAuthFromEnv } from '../../ingress/config.ts';
import { defineStage } from '../../processors/wiring/index.ts';
import { DEFAULT_OPS_PORTS, STAGES, type StageName } from '../../processors/stages.ts';
import { loadRuntimeConfig, setting } from '../../runtime/config.ts';
import { createLogger } from '../../runtime/log.ts';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';
import { topicNames } from '../../topics/catalog.ts';
import { containerEnv, manifests, serviceLinks, type Manifest } from '../helpers/kubelet.ts';

const exec = promisify(execFile);
const HELM = process.env.DEPLOY_HELM;
const KUBECONFORM = process.env.DEPLOY_KUBECONFORM;
const SCHEMAS = process.env.DEPLOY_K8S_SCHEMAS;
const VERSIONS = (process.env.DEPLOY_K8S_VERSIONS ?? '').split(',').filter(Boolean);
if (!HELM || !KUBECONFORM || !SCHEMAS || VERSIONS.length === 0)
  throw new Error('DEPLOY_HELM, DEPLOY_KUBECONFORM, DEPLOY_K8S_SCHEMAS and DEPLOY_K8S_VERSIONS are set by npm test (node deploy/prepare.js helm)');

const CHART = join(PACKAGE_ROOT, 'deploy', 'helm', 'tao-kafka');
const EXAMPLE = join(PACKAGE_ROOT, 'deploy', 'helm', 'examples', 'sasl-ssl-keda.yaml');
const OWN_SCHEMAS = join(PACKAGE_ROOT, 'deploy', 'helm', 'schemas');
const work = mkdtempSync(join(tmpdir(), 'tao-chart-'));
/** The release is named `tao`: every object is `tao-tao-kafka[-<process>]`. */
const FULL = 'tao-tao-kafka';
after(() => rmSync(work, { recursive: true, force: true }));

async function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(HELM!, args, { maxBuffer: 32 * 1024 * 1024, timeout: 60000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(err) };
  }
}

/** `helm template` of the chart; throws with helm's message when it refuses. */
async function render(valueArgs: string[], kubeVersion = VERSIONS.at(-1)!): Promise<string> {
  const r = await helm(['template', 'tao', CHART, '--namespace', 'agents', '--kube-version', kubeVersion, ...valueArgs]);
  if (r.code !== 0) throw new Error(r.stderr.trim());
  return r.stdout;
}

/** kubeconform -strict on a file, against the Kubernetes schemas of `version` and ours; resolves with its JSON report. */
async function kubeconform(
  file: string,
  version: string,
): Promise<{ code: number; report: { resources: Array<{ kind: string; name: string; status: string; msg: string }>; summary: Record<string, number> } }> {
  const args = [
    '-strict',
    '-summary',
    '-output',
    'json',
    '-schema-location',
    join(SCHEMAS!, `v${version}`, '{{ .ResourceKind }}{{ .KindSuffix }}.json'),
    '-schema-location',
    join(OWN_SCHEMAS, '{{ .ResourceKind }}{{ .KindSuffix }}.json'),
    file,
  ];
  try {
    const { stdout } = await exec(KUBECONFORM!, args, { maxBuffer: 8 * 1024 * 1024, timeout: 60000 });
    return { code: 0, report: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (!e.stdout) throw new Error(`kubeconform failed: ${e.stderr ?? String(err)}`);
    return { code: typeof e.code === 'number' ? e.code : 1, report: JSON.parse(e.stdout) };
  }
}

const VALUE_SETS: Record<string, string[]> = { default: [], 'sasl-ssl-keda': ['-f', EXAMPLE] };

describe('helm lint and kubeconform', () => {
  for (const [name, args] of Object.entries(VALUE_SETS)) {
    test(`helm lint --strict passes (${name} values)`, async () => {
      const r = await helm(['lint', '--strict', CHART, '--kube-version', VERSIONS.at(-1)!, ...args]);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });

    for (const version of VERSIONS) {
      test(`every manifest is valid for Kubernetes ${version}, offline (${name} values)`, async () => {
        const file = join(work, `${name}-${version}.yaml`);
        writeFileSync(file, await render(args, version));
        const { code, report } = await kubeconform(file, version);
        const bad = report.resources.filter((r) => r.status !== 'statusValid');
        assert.deepEqual(bad, [], JSON.stringify(bad, null, 2));
        assert.equal(code, 0);
        const kinds = manifests(await render(args, version)).map((m) => m.kind);
        assert.equal(report.summary.valid, kinds.length, 'every rendered manifest was validated (none skipped)');
        if (name === 'sasl-ssl-keda') assert.equal(kinds.filter((k) => k === 'ScaledObject').length, 3);
      });
    }
  }

  test('kubeconform refuses a bad Deployment and a bad ScaledObject (the schemas are really applied)', async () => {
    const file = join(work, 'bad.yaml');
    writeFileSync(
      file,
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata: { name: bad }',
        'spec:',
        '  selector: { matchLabels: { a: b } }',
        '  template:',
        '    metadata: { labels: { a: b } }',
        '    spec:',
        '      containers:',
        '        - name: c',
        '          image: x',
        '          ports: [{ containerPort: "9401" }]',
        '          readinessProbe: { httpGet: { path: /health, port: 9401 }, periodSecond: 5 }',
        '---',
        'apiVersion: keda.sh/v1alpha1',
        'kind: ScaledObject',
        'metadata: { name: bad }',
        'spec:',
        '  triggers: [{ type: kafka, metadata: { bootstrapServers: "kafka:9092", consumerGroup: tao-action, lagThreshold: "0" } }]',
      ].join('\n'),
    );
    const { code, report } = await kubeconform(file, VERSIONS.at(-1)!);
    assert.notEqual(code, 0);
    const byKind = Object.fromEntries(report.resources.map((r) => [r.kind, r]));
    assert.equal(byKind.Deployment?.status, 'statusInvalid');
    assert.match(byKind.Deployment!.msg, /containerPort.*got string, want integer/);
    assert.match(byKind.Deployment!.msg, /periodSecond/);
    assert.equal(byKind.ScaledObject?.status, 'statusInvalid');
    assert.match(byKind.ScaledObject!.msg, /scaleTargetRef/);
    assert.match(byKind.ScaledObject!.msg, /lagThreshold/);
  });
});

describe('the chart refuses what would not run', () => {
  test('values.schema.json (generated from runtime/config.ts) refuses an unknown variable and a bad enum value', async () => {
    await assert.rejects(render(['--set', 'config.TAO_PLANER=react']), /TAO_PLANER/);
    await assert.rejects(render(['--set', 'stages.action.config.TAO_ACTION_CONCURENCY=64']), /TAO_ACTION_CONCURENCY/);
    await assert.rejects(render(['--set', 'config.TAO_PLANNER=magic']), /TAO_PLANNER/);
    await assert.rejects(render(['--set', 'secrets.KAFKA_SASL_PASSWRD=x']), /KAFKA_SASL_PASSWRD/);
  });

  test('the ingress without API keys, callbacks without a secret, and secrets in two places', async () => {
    await assert.rejects(render(['--set', 'ingress.enabled=true']), /TAO_INGRESS_API_KEYS/);
    await assert.rejects(render(['--set', 'callbacks.enabled=true']), /TAO_CALLBACK_SECRET/);
    await assert.rejects(render(['--set', 'existingSecret=tao', '--set', 'secrets.KAFKA_SASL_PASSWORD=x']), /both set/);
    // Open on purpose, or keys in a Secret made elsewhere: rendered.
    assert.ok(manifests(await render(['--set', 'ingress.enabled=true', '--set', 'config.TAO_INGRESS_AUTH=off'])).some((m) => m.kind === 'Service'));
    assert.ok(manifests(await render(['--set', 'ingress.enabled=true', '--set', 'existingSecret=tao-secrets'])).some((m) => m.kind === 'Service'));
  });
});

const quiet = createLogger({}, { write: () => {} });

describe("each process's rendered environment passes the project's configuration checks", () => {
  for (const [name, args] of Object.entries(VALUE_SETS)) {
    test(`${name} values`, { timeout: 120000 }, async () => {
      const all = manifests(await render(args));
      const workloads = all.filter((m) => m.kind === 'Deployment' || m.kind === 'Job');
      const expected =
        name === 'default'
          ? ['action', 'observation', 'scheduler', 'thought', 'topics']
          : ['action', 'callbacks', 'ingress', 'observation', 'scheduler', 'thought', 'topics'];
      const processOf = (m: Manifest) => m.metadata.name.slice(FULL.length + 1);
      assert.deepEqual(workloads.map(processOf).sort(), expected);
      const facts = generatedFacts() as {
        stages: Record<StageName, { group: string; inputs: Array<{ topic: string; partitions: number }>; maxReplicas: number }>;
      };
      // The links kubelet would add for the release's Services, were they not turned off (a release named tao: TAO_TAO_KAFKA_...).
      const links = serviceLinks(
        all.filter((m) => m.kind === 'Service').map((m, i) => ({ name: m.metadata.name, clusterIP: `10.96.0.${10 + i}`, ports: m.spec.ports })),
      );
      if (name === 'sasl-ssl-keda') assert.ok(Object.keys(links).some((k) => k.startsWith('TAO_TAO_KAFKA_INGRESS_')));
      for (const workload of workloads) {
        const process = processOf(workload);
        const { env, container } = containerEnv(all, workload);
        const where = `${name}: ${process}`;
        assert.equal(workload.spec.template.spec.enableServiceLinks, false, `${where}: no service links`);
        // What every tao command runs first: no bad value, no unknown TAO_* name; the service links ignored.
        assert.doesNotThrow(() => checkStartupEnvironment(env), where);
        assert.doesNotThrow(() => checkStartupEnvironment({ ...links, ...env }), `${where}, with service links`);
        const config = loadRuntimeConfig(env);
        assert.notDeepEqual(config.kafka.brokers, ['127.0.0.1:9092'], `${where}: KAFKA_BROKERS is set`);
        if (process === 'topics') {
          assert.deepEqual(container.args, ['topics', 'apply']);
          assert.equal(workload.metadata.annotations?.['helm.sh/hook'], 'pre-install,pre-upgrade');
          continue;
        }
        assert.deepEqual(container.args, ['run', process], where);
        // The image binds to loopback: the chart opens the pods whose port a probe or a Service reaches, only those.
        assert.equal(config.bindHost, container.ports ? '0.0.0.0' : '127.0.0.1', where);
        if (!container.ports) assert.equal(container.readinessProbe, undefined, where);
        if ((STAGES as readonly string[]).includes(process)) {
          const stage = process as StageName;
          assert.equal(setting(env, 'TAO_OPS_PORT'), DEFAULT_OPS_PORTS[stage], where);
          for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
            assert.equal(container[probe].httpGet.path, '/health', `${where} ${probe}`);
            assert.equal(
              container.ports.find((p: { name: string }) => p.name === container[probe].httpGet.port)?.containerPort,
              DEFAULT_OPS_PORTS[stage],
              `${where} ${probe}`,
            );
          }
          // The stage's whole definition: planner, catalog, flows, rules, the ONNX models.
          const def = await defineStage(stage, env, quiet);
          assert.deepEqual(
            def.inputs.map((i) => topicNames('').name(i)),
            facts.stages[stage].inputs.map((i) => i.topic),
            where,
          );
        }
        if (process === 'ingress') {
          const auth = ingressAuthFromEnv(env, config.bindHost);
          assert.ok(auth, `${where}: API keys enforced on 0.0.0.0`);
        }
        if (process === 'callbacks') assert.ok(callbackOptionsFromEnv(env).secret);
        if (name === 'sasl-ssl-keda') {
          assert.equal(config.kafka.ssl, true, where);
          assert.deepEqual(config.kafka.sasl, { mechanism: 'scram-sha-512', username: 'tao', password: 'placeholder-sasl-password' }, where);
          assert.deepEqual(
            config.registry,
            { url: 'https://schema-registry.kafka.svc:8081', username: 'tao', password: 'placeholder-registry-password' },
            where,
          );
          // The CA file is on a mounted volume.
          const mounted = (container.volumeMounts as Array<{ mountPath: string }>).some((m) => config.kafka.sslCaFile!.startsWith(`${m.mountPath}/`));
          assert.ok(mounted, `${where}: KAFKA_SSL_CA_FILE ${config.kafka.sslCaFile} is on a volume`);
          assert.equal(env.TAO_INGRESS_API_KEYS !== undefined, process === 'ingress', `${where}: only the ingress gets the API keys`);
          assert.equal(env.TAO_CALLBACK_SECRET !== undefined, process === 'callbacks', `${where}: only the dispatcher gets the signing secret`);
        }
      }
      // KEDA: each stage's group and input topics, as the code names them in TAO_NAMESPACE, capped at the partitions.
      const scaled = all.filter((m) => m.kind === 'ScaledObject');
      if (name === 'sasl-ssl-keda') {
        const names = topicNames('prod');
        for (const stage of STAGES) {
          const so = scaled.find((m) => m.spec.scaleTargetRef.name === `${FULL}-${stage}`);
          assert.ok(so, stage);
          assert.ok(
            all.some((m) => m.kind === 'Deployment' && m.metadata.name === so.spec.scaleTargetRef.name && m.spec.replicas === undefined),
            `${stage}: KEDA owns the replica count`,
          );
          assert.ok(so.spec.maxReplicaCount <= facts.stages[stage].maxReplicas, `${stage}: at most one instance per partition`);
          for (const trigger of so.spec.triggers) {
            assert.equal(trigger.metadata.consumerGroup, names.group(stage));
            assert.equal(trigger.metadata.bootstrapServers, 'kafka-0.kafka-headless:9094,kafka-1.kafka-headless:9094,kafka-2.kafka-headless:9094');
            assert.equal(trigger.authenticationRef.name, `${FULL}-kafka`);
          }
          assert.deepEqual(
            so.spec.triggers.map((t: { metadata: { topic: string } }) => t.metadata.topic),
            facts.stages[stage].inputs.map((i) => `prod.${i.topic}`),
          );
        }
        const action = scaled.find((m) => m.metadata.name.endsWith('-action'))!;
        assert.equal(action.spec.maxReplicaCount, 6, "maxReplicas 12 capped at thought.requests' 6 partitions");
        const auth = all.find((m) => m.kind === 'TriggerAuthentication')!;
        const params = Object.fromEntries(auth.spec.secretTargetRef.map((r: { parameter: string; name: string; key: string }) => [r.parameter, r]));
        assert.deepEqual(Object.keys(params).sort(), ['ca', 'password', 'sasl', 'tls', 'username']);
        const kedaSecret = all.find((m) => m.kind === 'Secret' && m.metadata.name === params.sasl.name)!;
        assert.deepEqual(kedaSecret.stringData, { sasl: 'scram_sha512', tls: 'enable', username: 'tao' });
      } else assert.equal(scaled.length, 0);
      // The pre-install Job reads its secrets from a hook Secret that lives only while the hooks run.
      const job = workloads.find((m) => m.kind === 'Job')!;
      const refs = (job.spec.template.spec.containers[0].env as Array<{ valueFrom?: { secretKeyRef?: { name: string } } }>).flatMap((e) =>
        e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name] : [],
      );
      for (const ref of refs) {
        const secret = all.find((m) => m.kind === 'Secret' && m.metadata.name === ref)!;
        assert.match(secret.metadata.annotations?.['helm.sh/hook'] ?? '', /pre-install/, `${ref} exists when the Job runs`);
        assert.ok(Number(secret.metadata.annotations?.['helm.sh/hook-weight']) < Number(job.metadata.annotations?.['helm.sh/hook-weight']));
      }
    });
  }
});

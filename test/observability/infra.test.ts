// test-needs: promtool
/**
 * The files users load into Prometheus and Grafana (infra/observability/): they parse, scrape the
 * ports the processes listen on, alert on what the issue asks for, and name only metrics the
 * processes export. promtool (Debian/Ubuntu: the `prometheus` package, installed by .ci/run) checks the config
 * and rules are also checked by Prometheus itself and the alert unit tests in alerts.test.yml run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { DEFAULT_PORTS } from '../../cli/processes.ts';
import { DEFAULT_OPS_PORTS } from '../../processors/wiring/index.ts';
import { everyRegistry } from './metrics-text.ts';
import { parse as parseYaml } from 'yaml';

const dir = new URL('../../infra/observability/', import.meta.url).pathname;
const read = (name: string) => readFileSync(`${dir}${name}`, 'utf8');

type Doc = Record<string, unknown>;
interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Every metric name the processes export (all optional parts registered). */
async function exportedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const registry of everyRegistry())
    for (const m of await registry.getMetricsAsJSON()) {
      names.add(m.name);
      if (String(m.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${m.name}${suffix}`);
    }
  return names;
}

/** tao_* metric names an expression reads (recording rules, named tao:..., are not metrics). */
function metricsIn(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\b(tao_[a-z0-9_]+)\b/g)].map((m) => m[1]!))];
}

const rules = (): Rule[] => (parseYaml(read('alerts.yml')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);

describe('prometheus.yml', () => {
  test('scrapes the three stages on their default ops ports and the ingress, and loads the alert rules', () => {
    const config = parseYaml(read('prometheus.yml')) as Doc & {
      scrape_configs: Array<{ job_name: string; metrics_path?: string; static_configs: Array<{ targets: string[] }> }>;
      rule_files: string[];
    };
    const targets = Object.fromEntries(config.scrape_configs.map((s) => [s.job_name, s.static_configs.flatMap((c) => c.targets)]));
    assert.deepEqual(targets, {
      'tao-thought': [`127.0.0.1:${DEFAULT_OPS_PORTS.thought}`],
      'tao-action': [`127.0.0.1:${DEFAULT_OPS_PORTS.action}`],
      'tao-observation': [`127.0.0.1:${DEFAULT_OPS_PORTS.observation}`],
      'tao-ingress': [`127.0.0.1:${DEFAULT_PORTS.ingress}`],
    });
    for (const file of config.rule_files) assert.ok(existsSync(`${dir}${file}`), `rule file ${file} exists`);
  });
});

describe('alerts.yml', () => {
  test('alerts on completion rate < 92% and self-recovery < 70% for 5 minutes, growing lag, dead letters and open breakers', () => {
    const byName = new Map(
      rules()
        .filter((r) => r.alert)
        .map((r) => [r.alert!, r]),
    );
    const recorded = new Map(
      rules()
        .filter((r) => r.record)
        .map((r) => [r.record!, r.expr]),
    );
    const tcr = byName.get('TaoTaskCompletionRateLow')!;
    assert.match(tcr.expr, /tao:task_completion_rate:15m < 0\.92/);
    assert.equal(tcr.for, '5m');
    assert.match(
      recorded.get('tao:task_completion_rate:15m')!,
      /tao_runs_ended_total\{status="completed"\}[\s\S]*\/[\s\S]*tao_runs_ended_total\{status!="awaiting_input"\}/,
    );
    const srr = byName.get('TaoSelfRecoveryRateLow')!;
    assert.match(srr.expr, /tao:self_recovery_rate:15m < 0\.70/);
    assert.equal(srr.for, '5m');
    assert.match(recorded.get('tao:self_recovery_rate:15m')!, /tao_runs_with_failure_total\{recovered="true"\}/);
    assert.match(byName.get('TaoConsumerLagGrowing')!.expr, /delta\(tao_consumer_lag/);
    assert.match(byName.get('TaoDeadLettersIncreasing')!.expr, /increase\(tao_dead_letters_total/);
    assert.match(byName.get('TaoCircuitBreakerOpen')!.expr, /tao_breaker_state\) == 2/);
    for (const r of byName.values()) {
      assert.ok(r.labels?.severity, `${r.alert} has a severity`);
      assert.ok(r.annotations?.summary && r.annotations.description, `${r.alert} says what happened`);
    }
  });

  test('every expression reads only metrics the processes export', async () => {
    const names = await exportedNames();
    for (const r of rules()) for (const m of metricsIn(r.expr)) assert.ok(names.has(m), `${r.alert ?? r.record} reads ${m}, which no process exports`);
  });
});

describe('grafana-dashboard.json', () => {
  const dashboard = JSON.parse(read('grafana-dashboard.json')) as {
    uid: string;
    panels: Array<{ title: string; type: string; targets?: Array<{ expr: string }> }>;
  };
  const panels = dashboard.panels.filter((p) => p.type !== 'row');

  test('shows the rates, stage latency, tool latency by tool and status, lag, dead letters, breakers and runs in flight', () => {
    const exprs = (title: RegExp) =>
      panels
        .filter((p) => title.test(p.title))
        .flatMap((p) => p.targets?.map((t) => t.expr) ?? [])
        .join('\n');
    assert.match(exprs(/Task completion rate/), /tao_runs_ended_total/);
    assert.match(exprs(/Self-recovery rate/), /tao_runs_with_failure_total/);
    assert.match(exprs(/Traceability index/), /tao_steps_observed_total/);
    assert.match(exprs(/latency p95 by stage/), /tao_record_handle_seconds_bucket/);
    assert.match(exprs(/Tool call latency/), /sum by \(le, tool, status\)/);
    assert.match(exprs(/Consumer lag/), /tao_consumer_lag/);
    assert.match(exprs(/Dead letters/), /tao_dead_letters_total/);
    assert.match(exprs(/Circuit breakers/), /tao_breaker_state/);
    assert.match(exprs(/in flight/i), /tao_runs_in_flight/);
  });

  test('every panel query reads only metrics the processes export', async () => {
    const names = await exportedNames();
    for (const p of panels)
      for (const t of p.targets ?? []) for (const m of metricsIn(t.expr)) assert.ok(names.has(m), `panel "${p.title}" reads ${m}, which no process exports`);
  });
});

describe('promtool', () => {
  const available = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
  const promtool = (...args: string[]) => {
    const r = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, `promtool ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  };
  test('check config and rules', () => {
    assert.ok(available, 'promtool is not installed: `apt-get install prometheus` provides it (.ci/run installs it)');
    promtool('check', 'config', 'prometheus.yml');
    promtool('check', 'rules', 'alerts.yml');
  });
  test('alert unit tests (alerts.test.yml)', () => {
    assert.ok(available, 'promtool is not installed: `apt-get install prometheus` provides it (.ci/run installs it)');
    promtool('test', 'rules', 'alerts.test.yml');
  });
});

/**
 * Observation's verdicts, as a pure function of (action result, tool contracts). It reports what
 * happened; it never turns an error into a friendly story.
 */
import type { Ajv, ValidateFunction } from 'ajv';
import type { ActionResult, Check, ErrorType, ObservationResult, StepResult, Verdict } from '../../schemas/types.gen.ts';
import type { ToolCatalog } from '../../tools/catalog.ts';
import type { Plan } from '../thought/plan.ts';

export interface ObservationConfig {
  catalog: ToolCatalog;
  ajv: Ajv;
  /** A result slower than this multiple of the tool's timeout (per attempt) fails the latency check. */
  latencyFactor: number;
  /** Weights of the check groups in the confidence score. */
  weights: { hard: number; consistency: number };
}

export function observe(result: ActionResult, config: ObservationConfig): ObservationResult {
  const plan = JSON.parse(result.run.plan_json) as Plan;
  const expectations = new Map(plan.steps.map((s) => [s.id, s.expect]));
  return {
    thought_id: result.thought_id,
    iteration: result.iteration,
    run: result.run,
    verdicts: result.results.map((r) => judge(r, expectations.get(r.step_id), config)),
  };
}

function judge(r: StepResult, expect: Record<string, unknown> | undefined, config: ObservationConfig): Verdict {
  const tool = config.catalog.get(r.tool);
  const checks: Check[] = [];
  let errorType: ErrorType = 'ok';
  const fail = (type: ErrorType) => {
    if (errorType === 'ok') errorType = type;
  };

  if (r.error) {
    checks.push({ name: 'transport', passed: false, evidence: `${r.error.type}: ${r.error.message}` });
    fail(errorTypeOf(r));
  } else {
    checks.push({ name: 'transport', passed: true, evidence: `HTTP ${r.status_code} after ${r.attempts} attempt(s)` });
  }
  const statusOk = r.status_code !== null && r.status_code >= 200 && r.status_code < 300;
  checks.push({ name: 'status_class', passed: statusOk, evidence: r.status_code === null ? 'no status: no response received' : `status ${r.status_code}` });
  if (!statusOk) fail(errorTypeOf(r));

  if (tool) {
    const limit = config.latencyFactor * tool.spec.timeoutMs;
    const perAttempt = r.attempts > 0 ? r.response_time_ms / r.attempts : 0;
    const passed = perAttempt <= limit;
    checks.push({ name: 'latency', passed, evidence: `${Math.round(perAttempt)} ms per attempt, limit ${limit} ms (${config.latencyFactor}x timeout)` });
    if (!passed) fail('timeout');
  }

  let data: unknown = undefined;
  if (r.data_json !== null) data = JSON.parse(r.data_json);
  if (errorType === 'ok') {
    if (!tool) {
      checks.push({ name: 'response_schema', passed: false, evidence: `tool ${r.tool} is not in this catalog: its contract is unknown` });
      fail('schema_mismatch');
    } else if (tool.validateResponse(data)) {
      checks.push({ name: 'response_schema', passed: true, evidence: `matches the ${r.tool} response schema` });
    } else {
      checks.push({ name: 'response_schema', passed: false, evidence: describeErrors(tool.validateResponse, data) });
      fail('schema_mismatch');
    }
  }

  let consistencyPassed = true;
  if (errorType === 'ok' && expect) {
    const validate = compileCached(config.ajv, expect);
    consistencyPassed = validate(data);
    checks.push({ name: 'consistency', passed: consistencyPassed, evidence: consistencyPassed ? 'matches what the plan expected' : `expected ${JSON.stringify(expect)}; ${describeErrors(validate, data)}` });
    if (!consistencyPassed) fail('inconsistent');
  }

  const valid = errorType === 'ok';
  const { hard, consistency } = config.weights;
  const ran = hard + (expect ? consistency : 0);
  const confidence = valid ? (hard + (expect && consistencyPassed ? consistency : 0)) / ran : 0;
  return {
    step_id: r.step_id,
    tool: r.tool,
    valid,
    extracted_data_json: valid ? JSON.stringify(data) : null,
    confidence_score: confidence,
    error_type: errorType,
    audit_trail: checks,
    status_code: r.status_code,
    response_time_ms: r.response_time_ms,
    attempts: r.attempts,
  };
}

function errorTypeOf(r: StepResult): ErrorType {
  switch (r.error?.type) {
    case 'timeout': return 'timeout';
    case 'network': return 'network_issue';
    case 'too_large': return 'response_too_large';
    case 'invalid_input': return 'invalid_input';
    case 'malformed': return 'malformed';
    case 'circuit_open': return 'circuit_open';
  }
  const s = r.status_code;
  if (s === null) return 'network_issue';
  if (s === 429) return 'rate_limited';
  if (s === 401 || s === 403) return 'auth_failed';
  if (s === 404) return 'not_found';
  if (s >= 500) return 'server_error';
  if (s >= 400) return 'client_error';
  return 'unknown';
}

/** Each schema error with the actual value it was about, so the audit trail shows expected and actual. */
function describeErrors(validate: ValidateFunction, data: unknown): string {
  return (validate.errors ?? [])
    .map((e) => {
      const allowed = e.params && 'allowedValues' in e.params ? ` ${JSON.stringify(e.params.allowedValues)}` : '';
      return `${e.instancePath || '/'} ${e.message}${allowed} (actual: ${JSON.stringify(valueAt(data, e.instancePath))?.slice(0, 200) ?? 'undefined'})`;
    })
    .join('; ');
}

function valueAt(data: unknown, pointer: string): unknown {
  let current = data;
  for (const part of pointer.split('/').slice(1)) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return current;
}

const compiled = new WeakMap<Ajv, Map<string, ValidateFunction>>();
function compileCached(ajv: Ajv, schema: Record<string, unknown>): ValidateFunction {
  let cache = compiled.get(ajv);
  if (!cache) compiled.set(ajv, (cache = new Map()));
  const key = JSON.stringify(schema);
  let validate = cache.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    if (cache.size < 1000) cache.set(key, validate);
  }
  return validate;
}

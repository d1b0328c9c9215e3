/**
 * Observation's verdicts, as a deterministic function of (action result, tool contracts, rules,
 * classifier model). It reports what happened; it never turns an error into a friendly story.
 *
 * Checks, in order, each recorded in the audit trail with its evidence:
 * - hard (weight `hard`): transport (an answer arrived), status class (2xx), latency (the time of
 *   the attempt that answered — retries and Retry-After waits before it are not the tool being slow —
 *   within `latencyFactor` × the tool's timeout; records without `attempt_time_ms` are judged by
 *   their total time), response schema, forbidden values. Any hard
 *   failure makes the verdict invalid with confidence 0.
 * - consistency (weight `consistency`): the data satisfies what the plan expected of the step.
 * - semantic (weight `semantic`): the ONNX classifier reads the body. Its label replaces the rules'
 *   error type only at or above `semanticAdoptThreshold`; below it the rules' verdict stands and the
 *   audit trail says so. It can make a verdict invalid (a 200 that says "token expired"), never valid.
 */
import type { Ajv, ValidateFunction } from 'ajv';
import {
  ERROR_TYPE_SYMBOLS,
  type ActionResult,
  type Check,
  type ErrorType,
  type ObservationResult,
  type RunState,
  type StepResult,
  type Verdict,
  DeadLetterRef,
} from '../../schemas/types.gen.ts';
import type { ToolCatalog } from '../../tools/catalog.ts';
import { recordSchemas } from '../compiled-schemas.ts';
import { planOfRun } from '../plan.ts';
import { jsonField } from '../../runtime/json-field.ts';
import type { ObservationRules } from './rules.ts';
import { valueAt } from '../../runtime/json-pointer.ts';
import { modelErrorOf, usageOf, verifyModelAnswer } from './model-gate.ts';
import { policyCheck } from './policy-gate.ts';
import { turnOfStep } from '../run-driver.ts';
import type { CompiledPolicy } from '../guardrails/policies.ts';

/** The semantic classifier as the core sees it (processors/observation/classifier.ts implements it with onnxruntime). */
export interface PayloadClassifier {
  /** Model name and content hash, recorded in the audit trail. */
  readonly model: string;
  classify(text: string): Promise<{ label: string; confidence: number }>;
}

export interface ObservationConfig {
  catalog: ToolCatalog;
  ajv: Ajv;
  rules: ObservationRules;
  /** Null runs without the semantic check; its weight then counts as not earned. */
  classifier: PayloadClassifier | null;
  /**
   * The policies of a skill, by name (skills/<name>/policies.json, processors/guardrails/): the
   * calls a model answer proposes in a run of that skill are checked against them. Unset: none.
   */
  policies?: (skill: string) => readonly CompiledPolicy[];
}

/** The error types a classifier's label may name (the Avro enum's symbols). */
const ERROR_TYPES: ReadonlySet<string> = new Set<ErrorType>(ERROR_TYPE_SYMBOLS);
/** Rule outcomes vague enough for the classifier to place more precisely. */
const REFINABLE: ReadonlySet<ErrorType> = new Set(['schema_mismatch', 'malformed', 'client_error', 'unknown', 'data_corrupted']);

export async function observe(result: ActionResult, config: ObservationConfig): Promise<ObservationResult> {
  // A wave Action dead-lettered ran no call: nothing to judge, the dead letter goes on to Thought.
  if (result.dead_letter) return deadLetteredWave(result, result.dead_letter, config);
  const plan = planOfRun(result.run.plan_json);
  const expectations = new Map(plan.steps.map((s) => [s.id, s.expect]));
  const verdicts: Verdict[] = [];
  for (const r of result.results) verdicts.push(await judge(r, expectations.get(r.step_id), config, result.run));
  return {
    thought_id: result.thought_id,
    iteration: result.iteration,
    run: result.run,
    verdicts,
    rules_version: config.rules.fingerprint,
    classifier_model: config.classifier?.model ?? null,
    dead_letter: null,
  };
}

/** The observation of a wave that was dead-lettered (`ref`): no verdict, the dead letter's reference for Thought. */
export function deadLetteredWave(result: ActionResult, ref: DeadLetterRef, config: ObservationConfig): ObservationResult {
  return {
    thought_id: result.thought_id,
    iteration: result.iteration,
    run: result.run,
    verdicts: [],
    rules_version: config.rules.fingerprint,
    classifier_model: config.classifier?.model ?? null,
    dead_letter: ref,
  };
}

async function judge(r: StepResult, expect: Record<string, unknown> | undefined, config: ObservationConfig, run: RunState): Promise<Verdict> {
  const { rules } = config;
  const tool = config.catalog.get(r.tool);
  const checks: Check[] = [];
  let errorType: ErrorType = 'ok';
  const fail = (type: ErrorType) => {
    if (errorType === 'ok') errorType = type;
  };
  const body = r.response_raw === null ? '' : `; body: ${r.response_raw}`;

  // Hard checks.
  if (r.error) {
    checks.push({
      name: 'transport',
      passed: false,
      evidence: `${r.error.type}: ${r.error.message}${r.fallback_from ? ` (fallback for ${r.fallback_from}: ${r.fallback_reason})` : ''}${body}`,
    });
    fail(errorTypeOf(r));
  } else {
    checks.push({
      name: 'transport',
      passed: true,
      evidence: `HTTP ${r.status_code} after ${r.attempts} attempt(s)${r.fallback_from ? ` from fallback ${r.tool} (primary ${r.fallback_from}: ${r.fallback_reason})` : ''}`,
    });
  }
  const statusOk = r.status_code !== null && r.status_code >= 200 && r.status_code < 300;
  checks.push({ name: 'status_class', passed: statusOk, evidence: r.status_code === null ? 'no status: no response received' : `status ${r.status_code}` });
  if (!statusOk) fail(errorTypeOf(r));

  if (tool) {
    const limit = rules.latencyFactor * tool.spec.timeoutMs;
    const attempt = r.attempt_time_ms ?? null;
    const took = attempt ?? r.response_time_ms;
    const passed = took <= limit;
    const measured =
      attempt === null || r.attempts <= 1 ? `${took} ms` : `${took} ms for the attempt that answered (${r.response_time_ms} ms over ${r.attempts} attempts)`;
    checks.push({ name: 'latency', passed, evidence: `${measured}, limit ${limit} ms (${rules.latencyFactor} x timeout ${tool.spec.timeoutMs} ms)` });
    if (!passed) fail('timeout');
  }

  let data: unknown = undefined;
  if (r.data_json !== null) data = jsonField(r.data_json, `results[${r.step_id}].data_json`);
  if (errorType === 'ok') {
    if (!tool) {
      checks.push({ name: 'response_schema', passed: false, evidence: `tool ${r.tool} is not in this catalog: its contract is unknown` });
      fail('schema_mismatch');
    } else if (tool.validateResponse(data)) {
      checks.push({ name: 'response_schema', passed: true, evidence: `matches the ${r.tool} response schema` });
    } else {
      checks.push({ name: 'response_schema', passed: false, evidence: `${describeErrors(tool.validateResponse, data)}${body}` });
      fail('schema_mismatch');
    }
  }
  // A model's answer: the gate where a hallucinated tool or invalid arguments stop, before any tool runs.
  const isModel = tool?.spec.kind === 'model';
  // A model answer the gate rejected was still paid for: its usage is kept for Thought's accounting.
  let spent: ReturnType<typeof usageOf> = null;
  if (errorType === 'ok' && isModel) {
    const gate = verifyModelAnswer(data, r.input_json, (name) => config.catalog.get(name)?.validateInput, config.ajv, turnOfStep(r.step_id) ?? 0);
    checks.push({ name: 'model_answer', passed: gate.ok, evidence: gate.evidence });
    // The skill's policies judge the calls the answer proposes, on the run's recorded data only.
    const policies = gate.ok && gate.answer.kind === 'tool_calls' && config.policies ? policyCheck(gate.answer.calls, run, config.policies) : null;
    if (policies) checks.push(policies);
    if (gate.ok && policies?.passed !== false) data = gate.answer;
    else {
      fail(gate.ok ? 'policy_violation' : gate.errorType);
      spent = usageOf(data);
    }
  }
  if (errorType === 'ok') {
    const violations = [...rules.defaults.forbidden, ...(rules.tools[r.tool]?.forbidden ?? [])].flatMap((rule) => {
      const actual = valueAt(data, rule.path);
      return rule.values.some((v) => deepEqual(v, actual)) ? [`${rule.path} is ${JSON.stringify(actual)}: ${rule.reason}`] : [];
    });
    checks.push({
      name: 'forbidden_values',
      passed: violations.length === 0,
      evidence: violations.length ? `${violations.join('; ')}${body}` : 'no forbidden value',
    });
    if (violations.length) fail('data_corrupted');
  }
  const hardPassed = errorType === 'ok';

  // Consistency with what the plan expected.
  let consistencyScore = 1;
  if (hardPassed && expect) {
    const compiled = recordSchemas(config.ajv).compile(expect);
    const passed = compiled.ok && compiled.validate(data);
    consistencyScore = passed ? 1 : 0;
    checks.push({
      name: 'consistency',
      passed,
      evidence: passed
        ? `matches what the plan expected: ${JSON.stringify(expect)}`
        : compiled.ok
          ? `expected ${JSON.stringify(expect)}; ${describeErrors(compiled.validate, data)}`
          : `the plan's expect is not a usable JSON Schema (${compiled.error}): ${JSON.stringify(expect).slice(0, 200)}`,
    });
    if (!passed) fail('inconsistent');
  }

  // Semantic check on the body.
  let semanticScore = 0;
  // A model's words are not an error payload: the classifier reads tool answers only.
  if (config.classifier && !isModel && r.response_raw !== null && (errorType === 'ok' || REFINABLE.has(errorType))) {
    const { label, confidence } = await config.classifier.classify(r.response_raw);
    const known = ERROR_TYPES.has(label);
    const adopt = known && confidence >= rules.semanticAdoptThreshold;
    const said = `${config.classifier.model} says ${label} (${confidence.toFixed(4)})`;
    if (label === 'ok') {
      semanticScore = confidence;
      checks.push({
        name: 'semantic',
        passed: true,
        evidence: errorType === 'ok' ? said : `${said}; the rules' ${errorType} stands: the classifier cannot make a result valid`,
      });
    } else if (adopt && errorType === 'ok') {
      errorType = label as ErrorType;
      checks.push({ name: 'semantic', passed: false, evidence: `${said} >= ${rules.semanticAdoptThreshold}: adopted; body: ${r.response_raw}` });
    } else if (adopt) {
      checks.push({ name: 'semantic', passed: false, evidence: `${said} >= ${rules.semanticAdoptThreshold}: adopted in place of the rules' ${errorType}` });
      errorType = label as ErrorType;
    } else {
      checks.push({
        name: 'semantic',
        passed: errorType === 'ok',
        evidence: `${said} < ${rules.semanticAdoptThreshold}: not adopted, the rules' verdict (${errorType}) stands`,
      });
      if (errorType === 'ok') semanticScore = 0;
    }
  }

  const valid = errorType === 'ok';
  const serverError = isModel ? modelErrorOf(r.status_code, r.response_raw) : null;
  const { hard, semantic, consistency } = rules.weights;
  const confidence = valid ? round(hard * 1 + semantic * semanticScore + consistency * consistencyScore) : 0;
  return {
    step_id: r.step_id,
    tool: r.tool,
    valid,
    // A model endpoint's refusal of the request is data Thought acts on (a smaller prompt for a
    // context-length error): kept as fields, never read back from the audit trail's text.
    extracted_data_json: valid
      ? JSON.stringify(data)
      : isModel && serverError
        ? JSON.stringify({ server_error: serverError })
        : spent
          ? JSON.stringify({ spent })
          : null,
    confidence_score: confidence,
    error_type: errorType,
    audit_trail: checks,
    status_code: r.status_code,
    response_time_ms: r.response_time_ms,
    attempts: r.attempts,
    fallback_from: r.fallback_from,
  };
}

/** Rounded so the score is the same on every platform's floating point. */
function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

function errorTypeOf(r: StepResult): ErrorType {
  switch (r.error?.type) {
    case 'timeout':
      return 'timeout';
    case 'network':
      return 'network_issue';
    case 'too_large':
      return 'response_too_large';
    case 'invalid_input':
      return 'invalid_input';
    case 'malformed':
      return 'malformed';
    case 'circuit_open':
      return 'circuit_open';
    // An MCP tool whose definition changed on the server since it was imported: refused, not called.
    case 'schema_changed':
      return 'schema_mismatch';
    // An MCP tool's own error result (isError): what went wrong is in its text, for the classifier.
    case 'tool_error':
      return 'unknown';
  }
  const s = r.status_code;
  if (s === null) return 'network_issue';
  if (s === 429) return 'rate_limited';
  if (s === 401 || s === 403) return 'auth_failed';
  if (s === 404) return 'not_found';
  if (s === 408 || s === 504) return 'timeout';
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

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

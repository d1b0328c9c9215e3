import type { Ajv, ValidateFunction } from 'ajv';
import { ContractViolation } from '../runtime/errors.ts';
import { jsonObjectField } from '../runtime/json-field.ts';
import { valueAt } from '../runtime/json-pointer.ts';
import planSchema from '../schemas/json/plan.schema.json' with { type: 'json' };

/** A condition on JSON data: exactly one of `equals`, `in`, `notEquals` at a JSON pointer. */
export interface Condition {
  path: string;
  equals?: unknown;
  in?: unknown[];
  notEquals?: unknown;
}

/** A step of a plan: one tool call whose input may reference earlier steps' outputs (`{{S1.order_id}}`). */
export interface PlanStep {
  id: string;
  tool: string;
  input: Record<string, unknown>;
  depends_on: string[];
  /** JSON Schema the step's data must satisfy besides the tool's response schema. */
  expect?: Record<string, unknown>;
  /** Conditional edge: run only if the condition holds on dependency `step`'s data; else skipped. */
  when?: Condition & { step: string };
  /** Poll: call again each wave until the step's data satisfies the condition. */
  until?: Condition;
  /** Tool to switch to when reflection changes the plan for this step. */
  fallback?: string;
  /** Identical calls allowed for this step (overrides the run's cap). */
  max_calls?: number;
}

/** Whether `data` satisfies `condition` (a missing value satisfies only `notEquals`). */
export function holds(condition: Condition, data: unknown): boolean {
  const value = valueAt(data, condition.path);
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  if ('equals' in condition) return same(value, condition.equals);
  if ('in' in condition && condition.in) return condition.in.some((v) => same(value, v));
  if ('notEquals' in condition) return !same(value, condition.notEquals);
  return false;
}

/** A validated DAG of steps plus the run's output fields (references into step outputs). */
export interface Plan {
  flow: { id: string; version: number };
  steps: PlanStep[];
  output: Record<string, string>;
}

/**
 * The plan a run carries in `run.plan_json`. Thought validated it when it planned the run, so text
 * that is not a plan (not JSON, null, no steps) breaks the record's contract.
 */
export function planOfRun(planJson: string): Plan {
  const plan = jsonObjectField(planJson, 'run.plan_json');
  if (!Array.isArray(plan.steps) || !plan.steps.every((s) => typeof s === 'object' && s !== null && typeof (s as PlanStep).id === 'string')) {
    throw new ContractViolation(`run.plan_json is not a plan (no steps array of steps with ids): ${planJson.slice(0, 80)}`);
  }
  return plan as unknown as Plan;
}

/** What Thought needs to know about tools: names, the properties their responses declare, cost. */
export interface ToolContracts {
  has(tool: string): boolean;
  /** Property names of the tool's response object, or null when the schema does not list them. */
  responseFields(tool: string): string[] | null;
  /** Cost units of one call (catalog `cost`, default 1). */
  cost(tool: string): number;
  /**
   * Why the tool's contract refuses `value` for its input field `field` (the rule it breaks, e.g.
   * `must match pattern "^O-[0-9]{8}$"`), or null when it accepts it or says nothing about the field.
   */
  refusesInput(tool: string, field: string, value: unknown): string | null;
  /** Why the tool's input contract refuses `args` as a whole (each broken rule with its field), or null when it accepts them. */
  refusesArguments(tool: string, args: Record<string, unknown>): string | null;
}

const REF = /\{\{([A-Za-z][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\}\}/g;

/** Every `{{step.field}}` reference inside a JSON value. */
export function referencesIn(value: unknown): Array<{ step: string; field: string }> {
  const refs: Array<{ step: string; field: string }> = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') for (const m of v.matchAll(REF)) refs.push({ step: m[1]!, field: m[2]! });
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return refs;
}

/**
 * Replaces references with step outputs. A string that is exactly one reference takes the referenced
 * value with its type; references inside longer strings are interpolated as text.
 * @returns the resolved value, or the first reference that has no value.
 */
export function resolveReferences(
  value: unknown,
  outputs: Record<string, Record<string, unknown>>,
  skipped: ReadonlySet<string> = new Set(),
): { value: unknown } | { missing: string } {
  let missing: string | null = null;
  const lookup = (step: string, field: string): unknown => {
    // A step skipped by a conditional edge has no data: references to it read as null.
    if (skipped.has(step)) return null;
    const v = outputs[step]?.[field];
    if (v === undefined && missing === null) missing = `${step}.${field}`;
    return v;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = /^\{\{([A-Za-z][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\}\}$/.exec(v);
      if (whole) return lookup(whole[1]!, whole[2]!);
      return v.replace(REF, (_, step: string, field: string) => String(lookup(step, field) ?? ''));
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  const resolved = walk(value);
  return missing === null ? { value: resolved } : { missing };
}

export class PlanValidator {
  private readonly validateSchema: ValidateFunction;

  constructor(
    private readonly ajv: Ajv,
    private readonly maxSteps: number,
  ) {
    this.validateSchema = ajv.getSchema(planSchema.$id) ?? ajv.compile(planSchema);
  }

  /**
   * Checks a candidate plan: JSON Schema, step count, unique ids, known dependencies, no cycles,
   * known tools, and references that point at an ancestor step and a field its tool returns.
   * @returns the problems found (empty when the plan is valid), each naming the step and the rule.
   */
  validate(candidate: unknown, tools: ToolContracts): string[] {
    if (!this.validateSchema(candidate)) return (this.validateSchema.errors ?? []).map((e) => `plan${e.instancePath} ${e.message}`);
    const plan = candidate as Plan;
    const problems: string[] = [];
    if (plan.steps.length > this.maxSteps) problems.push(`plan has ${plan.steps.length} steps, more than the limit of ${this.maxSteps}`);
    const byId = new Map<string, PlanStep>();
    for (const step of plan.steps) {
      if (byId.has(step.id)) problems.push(`step id ${step.id} is used twice`);
      byId.set(step.id, step);
    }
    for (const step of plan.steps) {
      if (!tools.has(step.tool)) problems.push(`step ${step.id}: unknown tool ${step.tool}`);
      if (step.fallback !== undefined && !tools.has(step.fallback)) problems.push(`step ${step.id}: unknown fallback tool ${step.fallback}`);
      for (const dep of step.depends_on) if (!byId.has(dep)) problems.push(`step ${step.id}: depends on unknown step ${dep}`);
      if (step.when && !step.depends_on.includes(step.when.step))
        problems.push(`step ${step.id}: condition on ${step.when.step}, which is not one of its dependencies`);
      for (const [name, cond] of [
        ['when', step.when],
        ['until', step.until],
      ] as const) {
        if (cond && ['equals', 'in', 'notEquals'].filter((k) => k in cond).length !== 1)
          problems.push(`step ${step.id}: ${name} needs exactly one of equals, in, notEquals`);
      }
    }
    if (problems.length) return problems;
    const cycle = findCycle(plan.steps);
    if (cycle) return [`steps form a cycle: ${cycle.join(' -> ')}`];
    const ancestors = ancestorSets(plan.steps);
    const checkRef = (where: string, from: Set<string> | null, ref: { step: string; field: string }) => {
      const target = byId.get(ref.step);
      if (!target) return problems.push(`${where}: reference {{${ref.step}.${ref.field}}} names unknown step ${ref.step}`);
      if (from && !from.has(ref.step))
        return problems.push(`${where}: reference {{${ref.step}.${ref.field}}} uses step ${ref.step}, which it does not depend on`);
      const fields = tools.responseFields(target.tool);
      if (fields && !fields.includes(ref.field))
        problems.push(`${where}: reference {{${ref.step}.${ref.field}}}: ${target.tool} returns no field ${ref.field} (it returns ${fields.join(', ')})`);
      return 0;
    };
    for (const step of plan.steps) for (const ref of referencesIn(step.input)) checkRef(`step ${step.id}`, ancestors.get(step.id)!, ref);
    for (const [name, ref] of Object.entries(plan.output)) for (const r of referencesIn(ref)) checkRef(`output ${name}`, null, r);
    return problems;
  }
}

function findCycle(steps: PlanStep[]): string[] | null {
  const deps = new Map(steps.map((s) => [s.id, s.depends_on]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'visiting');
    path.push(id);
    for (const d of deps.get(id) ?? []) {
      const cycle = visit(d);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, 'done');
    return null;
  };
  for (const s of steps) {
    const cycle = visit(s.id);
    if (cycle) return cycle;
  }
  return null;
}

function ancestorSets(steps: PlanStep[]): Map<string, Set<string>> {
  const deps = new Map(steps.map((s) => [s.id, s.depends_on]));
  const memo = new Map<string, Set<string>>();
  const of = (id: string): Set<string> => {
    let set = memo.get(id);
    if (!set) {
      set = new Set<string>();
      for (const d of deps.get(id) ?? []) {
        set.add(d);
        for (const a of of(d)) set.add(a);
      }
      memo.set(id, set);
    }
    return set;
  };
  for (const s of steps) of(s.id);
  return memo;
}

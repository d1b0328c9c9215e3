import type { PlanStep, Plan, ToolContracts } from '../../plan.ts';
import { SlotExtractor } from '../slots.ts';
import type { Flow } from './flows.ts';
import type { Planner, PlannerTask, PlanningResult } from './planner.ts';

/**
 * Plans by instantiating a flow: inputs are extracted from the task text by the flow's patterns
 * ({@link SlotExtractor}), nodes become steps and edges become dependencies. An input that is
 * missing, or found in a shape a tool it feeds would refuse (its contract in the catalog), is asked
 * for (`needs_input` naming it) instead of being sent to the tool.
 */
export class GraphPlanner implements Planner {
  readonly name = 'graph';
  private readonly slots: SlotExtractor;

  constructor(
    readonly flow: Flow,
    private readonly tools: Pick<ToolContracts, 'refusesInput'>,
  ) {
    this.slots = new SlotExtractor(flow.inputs, `flow ${flow.id}@${flow.version}`);
  }

  get config(): string {
    return `${this.flow.id}@${this.flow.version}`;
  }

  plan(task: PlannerTask): PlanningResult {
    return this.instantiate(this.extract(task.text));
  }

  /** The flow's input values found in `text` (not yet checked against the tools' contracts). */
  extract(text: string): Record<string, string> {
    return this.slots.extract(text);
  }

  /**
   * The flow's plan for these input values, or what is missing: inputs without a value and inputs
   * whose value a tool would refuse (a tool is fed an input by a node field that is exactly
   * `{{input.<name>}}`).
   */
  instantiate(values: Record<string, string>): PlanningResult {
    const flow = { id: this.flow.id, version: this.flow.version };
    const absent = Object.keys(this.flow.inputs).filter((name) => values[name] === undefined);
    const refused = new Map<string, string>();
    for (const name of Object.keys(this.flow.inputs)) {
      if (values[name] === undefined) continue;
      for (const node of this.flow.nodes) {
        const field = Object.keys(node.input).find((k) => node.input[k] === `{{input.${name}}}`);
        const why = field === undefined ? null : this.tools.refusesInput(node.tool, field, values[name]);
        if (why !== null) {
          refused.set(name, `${name} "${values[name]}" is not in a form ${node.tool} accepts (${why}; wanted: ${this.flow.inputs[name]!.description})`);
          break;
        }
      }
    }
    if (absent.length || refused.size) {
      const missing = Object.keys(this.flow.inputs).filter((name) => absent.includes(name) || refused.has(name));
      const reasons = [
        ...refused.values(),
        ...(absent.length ? [`the task does not give: ${absent.map((m) => `${m} (${this.flow.inputs[m]!.description})`).join(', ')}`] : []),
      ];
      return { kind: 'needs_input', planner: this.name, flow, missing, reason: reasons.join('; ') };
    }
    const steps: PlanStep[] = this.flow.nodes.map((node) => {
      const incoming = this.flow.edges.filter((e) => e.to === node.id);
      const conditional = incoming.find((e) => e.when);
      return {
        id: node.id,
        tool: node.tool,
        input: substituteInputs(node.input, values) as Record<string, unknown>,
        depends_on: incoming.map((e) => e.from),
        ...(node.expect ? { expect: node.expect } : {}),
        ...(node.until ? { until: node.until } : {}),
        ...(node.fallback ? { fallback: node.fallback } : {}),
        ...(node.max_calls ? { max_calls: node.max_calls } : {}),
        ...(conditional ? { when: { step: conditional.from, ...conditional.when! } } : {}),
      };
    });
    const plan: Plan = { flow, steps, output: this.flow.output };
    return { kind: 'plan', planner: this.name, plan };
  }
}

function substituteInputs(value: unknown, inputs: Record<string, string>): unknown {
  if (typeof value === 'string') return value.replace(/\{\{input\.([A-Za-z_][A-Za-z0-9_]*)\}\}/g, (all, name: string) => inputs[name] ?? all);
  if (Array.isArray(value)) return value.map((v) => substituteInputs(v, inputs));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteInputs(v, inputs)]));
  return value;
}

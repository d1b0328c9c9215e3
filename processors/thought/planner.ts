import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Ajv } from 'ajv';
import { ConfigError } from '../../runtime/errors.ts';
import { packagePath } from '../../runtime/paths.ts';
import type { Condition, Plan, PlanStep, ToolContracts } from '../plan.ts';
import { SlotExtractor, slotSpecSchema, type SlotSpec } from './slots.ts';

/** What a planner returns: a candidate plan (validated by the caller), or the inputs it still needs. */
export type PlanningResult =
  | { kind: 'plan'; planner: string; plan: unknown }
  | { kind: 'needs_input'; planner: string; flow: { id: string; version: number }; missing: string[]; reason: string }
  /** The planner will not guess (an off-domain or unclear task): a person takes the run. */
  | { kind: 'escalate'; planner: string; reason: string }
  /**
   * A model takes the run with a skill; `facts` are the slots the model must keep. `mode` `react`
   * (the default): the model takes every turn; `plan-replan`: it writes whole plans (processors/thought/replan.ts).
   */
  | { kind: 'react'; planner: string; skill: string; facts: Record<string, string>; mode?: 'react' | 'plan-replan' };

/** What a planner sees of a task. */
export interface PlannerTask {
  thought_id: string;
  /** The run's text: the task, and any replies that resumed it, one per line. */
  text: string;
  metadata: Record<string, string>;
}

/**
 * Makes a plan for a task, in two parts so that Thought stays deterministic:
 * - `gather` (optional) does the planner's I/O (asking an LLM, say) and returns what it learned as
 *   a string. Thought's shell calls it, and the result is written to the log with the run
 *   (`RunState.planner_record`), so a replay reads it back instead of asking again. It must not
 *   throw for anything the outside world does (timeouts, garbage): record that, and let `plan` decide.
 * - `plan` is pure: the same task and record always give the same result.
 */
export interface Planner {
  /** The planner's kind (graph, router, llm), recorded with each run (`RunState.planner_kind`). */
  readonly name: string;
  /**
   * The versioned configuration it plans from, recorded with each run (`RunState.planner_config`) so
   * that a replay rebuilds the same planner: a flow key `<id>@<version>`, or `routes@<version>`.
   */
  readonly config: string;
  gather?(task: PlannerTask): Promise<string>;
  plan(task: PlannerTask, record: string | null): PlanningResult;
}

/** A flow: versioned JSON configuration of a graph of tool nodes (see flows/*.json). */
export interface Flow {
  id: string;
  version: number;
  description: string;
  /** How each input is found in the task text (see {@link SlotSpec}); the tools' contracts decide whether a found value is usable. */
  inputs: Record<string, SlotSpec>;
  nodes: Array<{
    id: string;
    tool: string;
    input: Record<string, unknown>;
    expect?: Record<string, unknown>;
    until?: Condition;
    fallback?: string;
    max_calls?: number;
  }>;
  /** Sequential edges (`from` before `to`); several edges into a node make a join; `when` makes an edge conditional. */
  edges: Array<{ from: string; to: string; when?: Omit<Condition, never> }>;
  output: Record<string, string>;
}

const flowSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'version', 'description', 'inputs', 'nodes', 'edges', 'output'],
  properties: {
    id: { type: 'string', pattern: '^[a-z][a-z0-9-]*$' },
    version: { type: 'integer', minimum: 1 },
    description: { type: 'string' },
    inputs: { type: 'object', additionalProperties: slotSpecSchema },
    nodes: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'tool', 'input'],
        properties: {
          id: { type: 'string' },
          tool: { type: 'string' },
          input: { type: 'object' },
          expect: { type: 'object' },
          until: { type: 'object' },
          fallback: { type: 'string' },
          max_calls: { type: 'integer', minimum: 1 },
        },
      },
    },
    edges: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['from', 'to'],
        properties: { from: { type: 'string' }, to: { type: 'string' }, when: { type: 'object' } },
      },
    },
    output: { type: 'object', additionalProperties: { type: 'string' } },
  },
} as const;

/** Loads and validates every `<id>.v<version>.json` flow of `dir`; a file whose name disagrees with its id and version is refused. */
export function loadFlows(dir: string, ajv: Ajv): Map<string, Flow> {
  const validate = ajv.compile<Flow>(flowSchema);
  const flows = new Map<string, Flow>();
  // Flow files are `<id>.v<version>.json`; other files in the folder (the routing table) are not flows.
  for (const file of readdirSync(dir)
    .filter((f) => /\.v\d+\.json$/.test(f))
    .sort()) {
    const flow: unknown = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    if (!validate(flow)) throw new ConfigError(`${join(dir, file)}: ${ajv.errorsText(validate.errors)}`);
    if (file !== `${flow.id}.v${flow.version}.json`)
      throw new ConfigError(`${join(dir, file)}: holds flow ${flow.id} version ${flow.version}; name it ${flow.id}.v${flow.version}.json`);
    new SlotExtractor(flow.inputs, join(dir, file));
    flows.set(`${flow.id}@${flow.version}`, flow);
  }
  return flows;
}

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

export const DEFAULT_FLOWS_DIR = packagePath('flows');

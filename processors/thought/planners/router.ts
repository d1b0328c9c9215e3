import type { ToolContracts } from '../../plan.ts';
import type { Flow, Routes } from './flows.ts';
import { GraphPlanner } from './graph.ts';
import type { IntentRoute } from './intent-model.ts';
import type { Planner, PlannerTask, PlanningResult } from './planner.ts';

/** The async part of routing (onnxruntime inference), injected so the planner itself stays testable. */
export interface IntentSource {
  route(text: string): Promise<IntentRoute>;
}

/**
 * Routes a task to a flow with the ONNX intent router, and takes the flow's inputs from the task text
 * with the flow's own patterns (slots live in the flow configuration, see `slots.ts`). `gather` runs
 * the model (its answer is recorded with the run, so a replay reads it back); `plan` is pure. An
 * `unknown` intent — off-domain, or below the router's confidence threshold — is escalated to a
 * person: the planner never guesses. The intent comes from the wording alone, so a ticket whose id is
 * missing or in a shape the tools do not accept still reaches its intent; among the intent's flows the
 * first whose inputs are all present and accepted by its tools is used, and when none is, the run asks
 * for the preferred flow's inputs (`needs_input` naming them). A second ask the router recorded
 * (`secondary`, issue 43) is named in the planner label and in an escalation's reason, so the person
 * who takes the run can follow it up; it never changes the flow.
 */
export class RouterPlanner implements Planner {
  readonly name = 'router';
  private readonly planners = new Map<string, GraphPlanner>();

  constructor(
    private readonly router: IntentSource,
    private readonly routes: Routes,
    flows: Map<string, Flow>,
    tools: Pick<ToolContracts, 'refusesInput'>,
  ) {
    for (const keys of Object.values(routes.intents)) for (const key of keys) this.planners.set(key, new GraphPlanner(flows.get(key)!, tools));
  }

  get config(): string {
    return `routes@${this.routes.version}`;
  }

  async gather(task: PlannerTask): Promise<string> {
    return JSON.stringify(await this.router.route(task.text));
  }

  plan(task: PlannerTask, record: string | null): PlanningResult {
    if (record === null) return { kind: 'escalate', planner: this.name, reason: 'no routing decision was recorded for this task' };
    const route = JSON.parse(record) as IntentRoute;
    const keys = this.routes.intents[route.intent];
    const also = route.secondary ? `; it also asks about ${route.secondary.intent} (${route.secondary.confidence.toFixed(3)})` : '';
    if (route.intent === 'unknown' || !keys) {
      const why =
        route.candidate === 'unknown'
          ? `off-domain (the router says unknown at ${route.confidence.toFixed(3)})`
          : `unclear (${route.candidate} at ${route.confidence.toFixed(3)} is below the routing threshold)`;
      return { kind: 'escalate', planner: `router(${route.model})`, reason: `the ticket is ${why}; a person takes it${also}` };
    }
    const results = keys.map((k) => this.planners.get(k)!.plan(task));
    const result = results.find((r) => r.kind === 'plan') ?? results[0]!;
    return { ...result, planner: `router(${route.intent} ${route.confidence.toFixed(3)}${also ? `, also ${route.secondary!.intent}` : ''})` };
  }
}

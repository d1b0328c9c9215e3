import type { IntentRoute } from './intent-model.ts';
import type { Planner, PlannerTask, PlanningResult } from './planner.ts';
import type { RouterPlanner } from './router.ts';

/** What the skill planner needs of a skill (processors/thought/skills.ts `Skill` satisfies it). */
export interface RoutableSkill {
  name: string;
  ref: string;
  runnable: boolean;
  planner?: 'plan' | 'react' | 'plan-replan';
}

/**
 * `TAO_PLANNER=react` and `TAO_PLANNER=plan-replan`: the ONNX intent router picks the skill (the one
 * whose `metadata.intents` names the intent), and the skill's mode decides who takes the run's
 * turns: `react` hands every turn to the model with the router's slots as protected facts;
 * `plan-replan` has the model write the whole plan, and a new one only when a reflection calls for
 * it; `plan` runs the intent's flows exactly as the router planner does. A skill that names no mode
 * gets the planner's default: `react` or `plan-replan`, as TAO_PLANNER says (that name is also this
 * planner's recorded kind, so a replay rebuilds the same default). An unknown intent, or an intent
 * no runnable skill serves, goes to the router planner (which escalates or plans from flows), except
 * that an `unknown` route below `routeModelBelow` (TAO_ROUTE_MODEL_BELOW) lets the model choose among
 * the runnable skills a model takes, in one constrained turn (`choose_skill`): a ticket in a language
 * or wording the router was not trained on still reaches its skill, and the model's `none` escalates.
 * `gather` is the router's (its decision is recorded); `plan` is pure.
 */
export class SkillPlanner implements Planner {
  constructor(
    private readonly router: RouterPlanner,
    private readonly skills: { forIntent(intent: string): RoutableSkill | undefined; list(): RoutableSkill[] },
    /** The mode of skills that do not name one; also the planner's name. */
    readonly name: 'react' | 'plan-replan' = 'react',
    /** An `unknown` route below this confidence lets the model choose the skill; 0: never. */
    private readonly routeModelBelow = 0,
  ) {}

  get config(): string {
    return this.router.config;
  }

  gather(task: PlannerTask): Promise<string> {
    return this.router.gather(task);
  }

  plan(task: PlannerTask, record: string | null): PlanningResult {
    if (record === null) return this.router.plan(task, record);
    const route = JSON.parse(record) as IntentRoute;
    if (route.intent === 'unknown' && route.confidence < this.routeModelBelow) {
      const skills = this.skills
        .list()
        .filter((s) => s.runnable && s.planner !== 'plan')
        .map((s) => s.name)
        .sort();
      const why =
        route.candidate === 'unknown'
          ? `unknown at ${route.confidence.toFixed(3)}`
          : `${route.candidate} at ${route.confidence.toFixed(3)}, below the threshold`;
      if (skills.length)
        return { kind: 'choose_skill', planner: `${this.name}(route by model: ${why})`, skills, facts: route.slots, reason: `the router says ${why}` };
    }
    const skill = route.intent === 'unknown' ? undefined : this.skills.forIntent(route.intent);
    if (!skill || !skill.runnable || skill.planner === 'plan') return this.router.plan(task, record);
    const mode = skill.planner ?? this.name;
    // A second ask the router recorded (issue 43) is named in the label; it never widens the skill's tools.
    const also = route.secondary ? `, also ${route.secondary.intent}` : '';
    return {
      kind: 'react',
      planner: `${mode}(${route.intent} ${route.confidence.toFixed(3)} ${skill.ref}${also})`,
      skill: skill.name,
      facts: route.slots,
      mode,
    };
  }
}

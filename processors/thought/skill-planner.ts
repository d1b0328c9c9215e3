import type { IntentRoute } from './intent-router.ts';
import type { Planner, PlannerTask, PlanningResult } from './planner.ts';
import type { RouterPlanner } from './router-planner.ts';

/** What the skill planner needs of a skill (processors/thought/skills.ts `Skill` satisfies it). */
export interface RoutableSkill {
  name: string;
  ref: string;
  runnable: boolean;
  planner?: 'plan' | 'react' | 'plan-replan';
}

/**
 * `TAO_PLANNER=react`: the ONNX intent router picks the skill (the one whose `metadata.intents`
 * names the intent), and the skill's mode decides who takes the run's turns: `react` (the default
 * here) hands it to the model with the router's slots as protected facts; `plan` runs the intent's
 * flows exactly as the router planner does. An unknown intent, or an intent no runnable skill
 * serves, goes to the router planner (which escalates or plans from flows). `gather` is the
 * router's (its decision is recorded); `plan` is pure.
 */
export class SkillPlanner implements Planner {
  readonly name = 'react';

  constructor(
    private readonly router: RouterPlanner,
    private readonly skills: { forIntent(intent: string): RoutableSkill | undefined },
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
    const skill = route.intent === 'unknown' ? undefined : this.skills.forIntent(route.intent);
    // `plan-replan` is not implemented yet: such a skill is run as `react` (the model re-plans each turn).
    if (!skill || !skill.runnable || skill.planner === 'plan') return this.router.plan(task, record);
    return { kind: 'react', planner: `react(${route.intent} ${route.confidence.toFixed(3)} ${skill.ref})`, skill: skill.name, facts: route.slots };
  }
}

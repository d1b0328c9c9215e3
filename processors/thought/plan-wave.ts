/**
 * A plan run's next wave (core.ts folds the last one first): steps a false condition or a skipped
 * dependency rules out are skipped; a plan whose steps are all done completes with its resolved
 * output; otherwise the bounds are checked (no novelty, the iteration limit, the repeat cap per
 * identical call, the cost budget) and the ready steps become one wave of calls. Pure.
 */
import type { RunState, StepCall } from '../../schemas/types.gen.ts';
import { holds, resolveReferences } from '../plan.ts';
import { atIterationLimit, callKey, digest, dispatchWave, end, ordinal, type RunAt, type RunContext, type ThoughtDecision } from './run-end.ts';
import type { ThoughtConfig } from './config.ts';

/**
 * Dispatches the next wave of `ctx.plan`, or ends the run.
 * @param again steps to call once more (retryable failures, an `until` not met yet, a new fallback tool)
 */
export function nextWave(ctx: RunContext, again: ReadonlySet<string>, config: ThoughtConfig): ThoughtDecision {
  const { plan, outputs } = ctx;
  const skipped = new Set(ctx.run.skipped);
  // Conditional edges: a step whose condition is false, or that depends on a skipped step, is skipped.
  for (let changed = true; changed;) {
    changed = false;
    for (const s of plan.steps) {
      if (skipped.has(s.id) || outputs[s.id] || again.has(s.id)) continue;
      if (s.depends_on.some((d) => skipped.has(d)) || (s.when && outputs[s.when.step] && !holds(s.when, outputs[s.when.step]))) {
        skipped.add(s.id);
        changed = true;
      }
    }
  }
  const at: RunAt = { ...ctx, run: { ...ctx.run, skipped: [...skipped] } };
  const { run } = at;
  const done = (id: string) => outputs[id] !== undefined || skipped.has(id);
  if (plan.steps.every((s) => done(s.id))) {
    const resolved = resolveReferences(plan.output, outputs, skipped);
    if ('missing' in resolved) return end(at, 'failed', 'output_unresolved', `output field ${resolved.missing} has no value`);
    const ran = plan.steps.length - skipped.size;
    return end(at, 'completed', 'completed', `all ${ran} step(s) verified${skipped.size ? `, ${skipped.size} skipped by conditions` : ''}`, {
      output: JSON.stringify(resolved.value),
    });
  }
  if (run.stale_waves >= config.noveltyWaves) return end(at, 'budget_exhausted', 'no_novelty', `no new information for ${run.stale_waves} waves`);
  const limit = atIterationLimit(at, `with ${plan.steps.filter((s) => !done(s.id)).length} step(s) unfinished`);
  if (limit) return limit;
  const ready = plan.steps.filter((s) => !done(s.id) && (again.has(s.id) || ((run.step_attempts[s.id] ?? 0) === 0 && s.depends_on.every(done))));
  if (ready.length === 0) return end(at, 'failed', 'no_ready_step', 'no step is ready and the plan is not finished');

  const steps: StepCall[] = [];
  const attempts = { ...run.step_attempts };
  const calls = { ...run.call_counts };
  let cost = 0;
  for (const step of ready) {
    const input = resolveReferences(step.input, outputs, skipped);
    if ('missing' in input) return end(at, 'failed', 'output_unresolved', `step ${step.id}: input reference ${input.missing} has no value`);
    const key = digest(`${step.tool}\u0000${JSON.stringify(input.value)}`);
    calls[key] = (calls[key] ?? 0) + 1;
    const cap = step.max_calls ?? config.repeatCap;
    if (calls[key]! > cap)
      return end(
        at,
        'budget_exhausted',
        'repeat_cap',
        `step ${step.id} would call ${step.tool} with the same input a ${ordinal(calls[key]!)} time (cap ${cap})`,
      );
    cost += config.tools.cost(step.tool);
    attempts[step.id] = (attempts[step.id] ?? 0) + 1;
    steps.push({
      step_id: step.id,
      tool: step.tool,
      input_json: JSON.stringify(input.value),
      idempotency_key: callKey(at, step.id, step.tool, input.value, step.until ? pollRound(run, step.id) : 1),
      attempt: attempts[step.id]!,
    });
  }
  if (run.cost_budget > 0 && run.cost_spent + cost > run.cost_budget) {
    return end(at, 'budget_exhausted', 'cost_budget', `the next wave costs ${cost} unit(s); ${run.cost_spent} of the budget ${run.cost_budget} is spent`);
  }
  const next: RunState = { ...run, step_attempts: attempts, call_counts: calls, cost_spent: run.cost_spent + cost };
  return dispatchWave({ ...at, run: next }, steps);
}

/**
 * The round of a polling step's next call (callKey): the attempt its call began at. A retry (the
 * step's last answers failed) continues the round of the call it retries; after a valid answer
 * whose `until` did not hold, the step calls again in a new round.
 */
function pollRound(run: RunState, stepId: string): number {
  return (run.step_attempts[stepId] ?? 0) - (run.failure_streaks[stepId] ?? 0) + 1;
}

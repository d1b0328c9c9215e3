/**
 * Complete record values for code that writes records by hand (tests, the bad-input corpus): every
 * field a schema adds gets its default here once.
 */
import type { Outcome, RunState } from './types.gen.ts';

export function runState(overrides: Partial<RunState> = {}): RunState {
  return {
    task_id: 'task',
    task_text: 'text',
    planner: 'test',
    flow_id: 'test',
    flow_version: 1,
    plan_json: 'null',
    outputs_json: '{}',
    step_attempts: {},
    max_iterations: 10,
    planner_record: null,
    cost_spent: 0,
    cost_budget: 0,
    call_counts: {},
    seen_data: [],
    stale_waves: 0,
    failure_streaks: {},
    error_history: {},
    skipped: [],
    reflections: [],
    failures_seen: 0,
    human_involved: false,
    planner_kind: null,
    planner_config: null,
    model_state_json: null,
    driver: null,
    approved_calls: [],
    manifest: null,
    ...overrides,
  };
}

export function outcome(overrides: Partial<Outcome> & Pick<Outcome, 'thought_id' | 'task_id'>): Outcome {
  return {
    status: 'completed',
    reason: 'done',
    iterations: 1,
    steps_executed: 1,
    output_json: '{}',
    missing_fields: [],
    planner: 'graph',
    flow_id: 'f',
    flow_version: 1,
    reason_code: 'completed',
    reflections: [],
    planner_kind: null,
    planner_config: null,
    model_cost: null,
    too_large: null,
    result_json: null,
    approval: null,
    dead_letter: null,
    manifest: null,
    ...overrides,
  };
}

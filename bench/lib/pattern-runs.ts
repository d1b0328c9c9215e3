/**
 * The three seed patterns `npm run models:patterns` runs (ReAct, plan-and-execute with re-planning,
 * Reflexion), and what it reads back from the committed log to say whether each pattern really
 * happened: the run's outcome, the kind of each model turn (the second line of its system message,
 * `Turn: plan` / `Turn: reflection`; react otherwise), the tool calls with their verdicts, and the
 * reflections the outcome recorded. Pure: decoded records in, findings out.
 */
import type { ObservationResult, Outcome, Reflection, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { DecodedRecord } from './loop-log.ts';

const MODEL_TOOL = 'model.chat';

/** A pattern's id, as `--only` takes it. */
export type PatternId = 'react' | 'plan-replan' | 'reflexion';

/** One pattern: the ticket, the Thought settings it runs with, and the tool fault it meets. */
export interface Pattern {
  id: PatternId;
  title: string;
  ticket: string;
  /** Settings of the stages for this pattern's run (TAO_PLANNER, TAO_REFLECT_AFTER). */
  env: Record<string, string>;
  /** The tool the tool server fails (HTTP 503) for its first `calls` calls, each with every retry Action makes; null: none. */
  /** The tool whose calls fail (each of Action's attempts), how many calls, and how: HTTP 503 (default) or a time-out. */
  fault: { tool: string; calls: number; mode?: 'server_error' | 'timeout' } | null;
}

/**
 * The patterns, each on an order-status ticket with an order that has shipped or been delivered
 * (so the model has `orders.get` and `shipping.track` to call). Plan-replan's tracking fails as
 * often as it takes the rule-based reflection to call for a new plan (TAO_REFLECT_AFTER, default
 * 2). Reflexion's order lookup times out once (the first tool every model calls: the real 1.5B
 * answers a delivered order without tracking it), and with TAO_REFLECT_AFTER=1 the next turn is the
 * model's reflection, after which a tool must answer (the lookup again, or the tracking).
 */
export const PATTERNS: readonly Pattern[] = [
  {
    id: 'react',
    title: 'ReAct',
    ticket: 'Where is my order O-55501234? It has not arrived yet.',
    env: { TAO_PLANNER: 'react' },
    fault: null,
  },
  {
    id: 'plan-replan',
    title: 'plan-replan',
    ticket: 'Where is my order O-27182818? I would like to know when it arrives.',
    env: { TAO_PLANNER: 'plan-replan', TAO_REFLECT_AFTER: '2' },
    fault: { tool: 'shipping.track', calls: 2 },
  },
  {
    id: 'reflexion',
    title: 'Reflexion',
    ticket: 'Where is my order O-31415926? Please check the delivery.',
    env: { TAO_PLANNER: 'react', TAO_REFLECT_AFTER: '1' },
    fault: { tool: 'orders.get', calls: 1, mode: 'timeout' },
  },
];

/** A model turn of a run: its step and kind. */
export interface ModelTurn {
  step: string;
  iteration: number;
  kind: string;
}

/** A tool call of a run and Observation's verdict on it. */
export interface ToolCall {
  step: string;
  iteration: number;
  tool: string;
  valid: boolean;
  error: string | null;
}

/** A pattern's run as the log has it. */
export interface PatternRun {
  thoughtId: string;
  status: string;
  reasonCode: string;
  reason: string;
  /** The model's final answer, or the run's output fields (plan-replan) as JSON; null when none. */
  answer: string | null;
  plannerKind: string | null;
  turns: ModelTurn[];
  calls: ToolCall[];
  reflections: Reflection[];
}

/** The run `thoughtId` from decoded committed records (every record of the namespace); null without an outcome. */
export function readPatternRun(thoughtId: string, records: readonly DecodedRecord[]): PatternRun | null {
  const own = records.filter((r) => r.key === thoughtId && r.decoded);
  const outcome = own.filter((r) => r.id === 'outcomes').at(-1)?.decoded as unknown as Outcome | undefined;
  if (!outcome) return null;
  const turns: ModelTurn[] = [];
  for (const r of own.filter((x) => x.id === 'thoughtRequests')) {
    const request = r.decoded as unknown as ThoughtRequest;
    for (const s of request.steps) if (s.tool === MODEL_TOOL) turns.push({ step: s.step_id, iteration: request.iteration, kind: turnKind(s.input_json) });
  }
  const calls: ToolCall[] = [];
  for (const r of own.filter((x) => x.id === 'observationResults')) {
    const o = r.decoded as unknown as ObservationResult;
    for (const v of o.verdicts)
      if (v.tool !== MODEL_TOOL) calls.push({ step: v.step_id, iteration: o.iteration, tool: v.tool, valid: v.valid, error: v.valid ? null : v.error_type });
  }
  const output = outcome.output_json ? (JSON.parse(outcome.output_json) as Record<string, unknown>) : null;
  const answer = output === null ? null : typeof output.answer === 'string' ? output.answer : JSON.stringify(output);
  return {
    thoughtId,
    status: outcome.status,
    reasonCode: outcome.reason_code,
    reason: outcome.reason,
    answer,
    plannerKind: outcome.planner_kind,
    turns,
    calls,
    reflections: outcome.reflections,
  };
}

/** The kind of a model turn from its request: the system message's `Turn: <kind>` line, or `react`. */
export function turnKind(inputJson: string): string {
  const body = JSON.parse(inputJson) as { messages?: Array<{ role?: string; content?: unknown }> };
  const system = body.messages?.find((m) => m.role === 'system')?.content;
  const second = typeof system === 'string' ? (system.split(/\r?\n/)[1] ?? '') : '';
  return /^Turn:\s*(\S+)/.exec(second.trim())?.[1] ?? 'react';
}

/**
 * What is missing for `run` to show `pattern` completing (empty: it did). Read from the log only:
 * the planner the run recorded, its outcome, the kinds of its model turns, its tool calls and the
 * reflections in its outcome. `faultApplied`: whether the tool server failed any request of the
 * pattern's fault (a plan that never called the tool cannot show a re-plan after it failed).
 */
export function patternProblems(pattern: Pattern, run: PatternRun | null, faultApplied: boolean): string[] {
  if (!run) return ['no outcome within the wait'];
  const problems: string[] = [];
  // The reason may quote a model's answer: one line, cut, so a progress line stays a line.
  if (run.status !== 'completed') problems.push(`ended ${run.status} (${run.reasonCode}): ${oneLine(run.reason, 300)}`);
  const planner = pattern.env.TAO_PLANNER!;
  if (run.plannerKind !== planner) problems.push(`planned by ${run.plannerKind ?? 'an unrecorded planner'}, not ${planner}`);
  const kinds = (kind: string) => run.turns.filter((t) => t.kind === kind);
  const verified = run.calls.filter((c) => c.valid);
  switch (pattern.id) {
    case 'react':
      if (kinds('react').length < 2) problems.push(`${kinds('react').length} react turn(s): a ReAct run reasons, acts and answers in at least two`);
      if (!verified.length) problems.push('no tool call was verified: the answer did not act on anything');
      break;
    case 'plan-replan': {
      const plans = kinds('plan');
      if (!plans.length) problems.push('no plan turn (Turn: plan) in the log');
      if (!faultApplied) problems.push(`the plan never called ${pattern.fault!.tool}, so no step failed and nothing called for a re-plan`);
      else {
        if (plans.length < 2) problems.push(`${plans.length} plan turn(s): no re-plan after ${pattern.fault!.tool} failed`);
        if (!run.reflections.some((r) => r.action === 'change_plan')) problems.push('no reflection in the outcome called for a new plan (change_plan)');
      }
      break;
    }
    case 'reflexion': {
      const tool = pattern.fault!.tool;
      if (!kinds('reflection').length) problems.push('no reflection turn (Turn: reflection) in the log');
      const own = run.reflections.filter((r) => r.author.startsWith('model:'));
      if (!own.length) problems.push('no model-written reflection in the outcome');
      const failedAt = run.calls.find((c) => c.tool === tool && !c.valid)?.iteration;
      const reflectedAt = kinds('reflection')[0]?.iteration;
      if (failedAt === undefined) problems.push(`${tool} never failed, so there was nothing to reflect on`);
      // The reflection changed what the run did next: a call answered after it (the failed tool again, or another way to the answer).
      else if (reflectedAt !== undefined && !run.calls.some((c) => c.valid && c.iteration > Math.max(failedAt, reflectedAt)))
        problems.push(`no tool answered after the model's reflection on the failed ${tool}`);
      break;
    }
  }
  return problems;
}

/**
 * The timeline excerpt of a run: `tao replay <id>`'s terminal rendering without its per-record
 * bookkeeping lines (attempt times, dead-letter fields, Observation's rule and classifier versions),
 * so the waves, their steps, the reflections and the outcome remain.
 */
export function timelineExcerpt(terminal: string): string {
  return terminal
    .split('\n')
    .filter((line) => !/^\s+(result|observation)\.\w+: /.test(line) && !/^\s+\S+: result\.attempt_time_ms: /.test(line))
    .join('\n');
}

/** `text` on one line (runs of white space as one space), cut to `max` characters. */
export function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * What a run's stream sends for each record: the SSE event name and its JSON data. Every event's
 * data has `thought_id` and `record` (`{topic, partition, offset, timestamp}`, where it was read),
 * then what the record says:
 *
 * | record | event | data |
 * |---|---|---|
 * | task NEW / REPLY | `task` / `reply` | `task_id, kind, text, source, external_id, submitted_at_ms` |
 * | task DECISION | `decision` | the above and `decision` (verdict, interrupt id or step, edited arguments, who, when, why) |
 * | task TIMER | `timer` | the above and `timer` |
 * | thought.requests | `wave` | `iteration, steps[]` (`step_id, tool, input, attempt`; a model turn's `model_request`: model, messages, tools) |
 * | action.results | `results` | `iteration, results[]` (`step_id, tool, status_code, response_time_ms, attempts, error, data`; a model turn's `model_usage`) |
 * | observation.results | `verdicts` | `iteration, verdicts[]` (`step_id, tool, valid, error_type, confidence_score, data`: a model turn's verified answer) |
 * | tao.outcomes, parked for a person | `approval` / `input_required` | the outcome (`approval.calls[]`: interrupt id, tool, arguments, rule, why, decision) |
 * | tao.outcomes, the end | `outcome` | `status, reason_code, reason, iterations, output, result, approval, model_cost` |
 *
 * Task metadata is not sent (it may hold a callback URL with a token in it).
 */
import type { RunRecord } from './order.ts';

export interface RunEvent {
  /** The cursor after this event (runtime/run-stream/cursor.ts): the SSE `id`. */
  id: string;
  event: string;
  data: Record<string, unknown>;
}

const TASK_EVENTS: Record<string, string> = { NEW: 'task', REPLY: 'reply', DECISION: 'decision', TIMER: 'timer' };

/** The event name and data of one record. */
export function eventOf(r: RunRecord, topicName: string): Omit<RunEvent, 'id'> {
  const v = r.value;
  const base = { thought_id: v.thought_id, record: { topic: topicName, partition: r.partition, offset: String(r.offset), timestamp: r.timestamp } };
  switch (r.topic) {
    case 'tasks': {
      const kind = String(v.kind);
      const data = { ...base, task_id: v.task_id, kind, text: v.text, source: v.source, external_id: v.external_id, submitted_at_ms: v.submitted_at_ms };
      return {
        event: TASK_EVENTS[kind] ?? 'task',
        data: { ...data, ...(v.decision ? { decision: v.decision } : {}), ...(v.timer ? { timer: v.timer } : {}) },
      };
    }
    case 'thoughtRequests':
      return { event: 'wave', data: { ...base, iteration: v.iteration, steps: list(v.steps).map(stepOf) } };
    case 'actionResults':
      return { event: 'results', data: { ...base, iteration: v.iteration, results: list(v.results).map(resultOf), dead_letter: v.dead_letter ?? null } };
    case 'observationResults':
      return {
        event: 'verdicts',
        data: {
          ...base,
          iteration: v.iteration,
          verdicts: list(v.verdicts).map((x) => ({
            step_id: x.step_id,
            tool: x.tool,
            valid: x.valid,
            error_type: x.error_type,
            confidence_score: x.confidence_score,
            data: json(x.extracted_data_json),
          })),
          dead_letter: v.dead_letter ?? null,
        },
      };
    case 'outcomes': {
      const event = v.status === 'awaiting_approval' ? 'approval' : v.status === 'awaiting_input' ? 'input_required' : 'outcome';
      const { output_json, result_json, planner_config: _c, ...rest } = v;
      return { event, data: { ...base, ...rest, output: json(output_json), result: json(result_json) } };
    }
  }
}

function stepOf(s: Record<string, unknown>): Record<string, unknown> {
  const input = json(s.input_json);
  const step: Record<string, unknown> = { step_id: s.step_id, tool: s.tool, attempt: s.attempt, idempotency_key: s.idempotency_key, input };
  if (String(s.tool).startsWith('model.') && isObject(input)) {
    step.model_request = {
      model: input.model ?? null,
      messages: Array.isArray(input.messages) ? input.messages.length : Array.isArray(input.input) ? input.input.length : null,
      tools: Array.isArray(input.tools) ? input.tools.length : 0,
    };
  }
  return step;
}

function resultOf(s: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    step_id: s.step_id,
    tool: s.tool,
    status_code: s.status_code,
    response_time_ms: s.response_time_ms,
    attempts: s.attempts,
    error: s.error,
    data: json(s.data_json),
  };
  if (String(s.tool).startsWith('model.')) out.model_usage = usageOf(s.response_raw);
  return out;
}

/**
 * Token counts of a model answer's raw response, whichever wire it came over (chat completions'
 * `prompt_tokens`/`completion_tokens`, the Responses and Messages APIs' `input_tokens`/`output_tokens`);
 * null when it has none.
 */
export function usageOf(raw: unknown): { input_tokens: number; output_tokens: number; total_tokens: number } | null {
  const body = json(raw);
  const u = isObject(body) && isObject(body.usage) ? body.usage : null;
  if (!u) return null;
  const n = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : 0);
  const input = n(u.prompt_tokens ?? u.input_tokens);
  const output = n(u.completion_tokens ?? u.output_tokens);
  return { input_tokens: input, output_tokens: output, total_tokens: n(u.total_tokens) || input + output };
}

function json(text: unknown): unknown {
  if (typeof text !== 'string') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function list(x: unknown): Array<Record<string, unknown>> {
  return Array.isArray(x) ? (x as Array<Record<string, unknown>>) : [];
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

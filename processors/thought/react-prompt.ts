/**
 * What a react run's next prompt is built from (react-turn.ts hands it to the prompt builder): the
 * earlier turns with their calls and observations, the reflections, and the window the prompt is
 * built for. Pure: only recorded data is read, so a replay builds the same prompt.
 */
import type { RunState } from '../../schemas/types.gen.ts';
import { resolveReferences, type Plan } from '../plan.ts';
import type { PromptCall, PromptTurn } from './prompt-types.ts';
import type { ModelAnswer } from '../model-wire.ts';
import { callStep, isModelStep, turnOf, type ModelState, type TurnContext } from './react-types.ts';

/**
 * The earlier turns for the prompt builder: each with its tool calls and what each call found, and
 * each rejected answer as the model's own turn saying what was wrong with it (the model sees its
 * mistake where it made it, and the conversation moves on).
 * @param before the turn being built: the turns before it are shown
 */
export function promptTurns(ctx: Pick<TurnContext, 'run' | 'plan' | 'outputs' | 'state'>, before: number): PromptTurn[] {
  const { plan, outputs } = ctx;
  const { rejected, replies = [] } = ctx.state;
  const errors = ctx.run.error_history;
  const skipped = new Set(ctx.run.skipped);
  const turns: PromptTurn[] = [];
  for (const step of plan.steps) {
    if (!isModelStep(step.id) || turnOf(step.id) >= before) continue;
    const turn = turnOf(step.id);
    const refused = rejected.find((r) => r.turn === turn);
    const answer = outputs[step.id] as unknown as ModelAnswer | undefined;
    if (refused) {
      // A final answer Thought refused (ungrounded, unsupported facts) is shown as the model wrote it: a
      // placeholder in its place is what a small model copies as its next answer.
      const own = answer?.kind === 'final' ? answer.content.slice(0, 600) : null;
      turns.push({ turn, content: own, calls: [], rejected: { error: refused.error, evidence: refused.evidence } });
      continue;
    }
    if (answer?.kind === 'plan') {
      turns.push({ turn, content: answer.content, calls: planCalls(plan, step.id, outputs, errors, skipped) });
      continue;
    }
    // The model asked the customer: its question, and the reply once it came, are part of the conversation.
    if (answer?.kind === 'ask') {
      turns.push({ turn, content: null, calls: [], asked: { question: answer.question, reply: replies.find((r) => r.turn === turn)?.text ?? null } });
      continue;
    }
    if (!answer || answer.kind !== 'tool_calls') continue;
    const calls: PromptCall[] = answer.calls.map((c, i) => {
      const id = callStep(turn, i + 1);
      const data = outputs[id];
      const failure = errors[id]?.at(-1) ?? null;
      return {
        id: c.id,
        tool: c.tool,
        arguments: c.arguments,
        valid: data !== undefined,
        extracted: data ?? null,
        raw: data !== undefined ? JSON.stringify(data) : '',
        error: data !== undefined ? null : (failure ?? 'no result'),
      };
    });
    turns.push({ turn, content: answer.content, calls });
  }
  return turns;
}

/**
 * The steps of the plan written in turn `modelStepId` that ran, as that turn's calls (id = the step's
 * run id, so a later plan can reference a result by it), with what each found or why it failed.
 */
export function planCalls(
  plan: Plan,
  modelStepId: string,
  outputs: Record<string, Record<string, unknown>>,
  errors: Record<string, string[]>,
  skipped: ReadonlySet<string>,
): PromptCall[] {
  return plan.steps
    .filter((s) => s.id.startsWith(`${modelStepId}_`) && (outputs[s.id] !== undefined || (errors[s.id]?.length ?? 0) > 0))
    .map((s) => {
      const data = outputs[s.id];
      const input = resolveReferences(s.input, outputs, skipped);
      const args = 'value' in input ? (input.value as Record<string, unknown>) : s.input;
      return {
        id: s.id,
        tool: s.tool,
        arguments: args,
        valid: data !== undefined,
        extracted: data ?? null,
        raw: data !== undefined ? JSON.stringify(data) : '',
        error: data !== undefined ? null : (errors[s.id]?.at(-1) ?? 'no result'),
      };
    });
}

/** Reflections, shown in every later prompt: the model's own in its words, a rule-based one by what it found. */
export function notes(run: RunState): string[] {
  return run.reflections.map((r) => {
    if (r.author.startsWith('model:')) return `turn ${turnOf(r.step_id)} reflection (${r.action}): ${r.summary}`;
    const found = r.dimensions.filter((d) => d.result !== 'PASS').map((d) => `${d.name} ${d.result}: ${d.evidence}`);
    return `rule-based reflection on ${r.step_id} (${r.tool}, ${r.action})${found.length ? `: ${found.join('; ')}` : ''}`;
  });
}

/**
 * The window a turn's prompt is built for: the skill's, scaled down by what the recorded turns say.
 * The builder estimates tokens (one per four characters, one per CJK character); the server's
 * `usage.prompt_tokens` of each earlier turn says how far off that was for this model and template,
 * and a prompt the server refused as too long (`window_scale`) takes a quarter off each time. Only
 * recorded numbers are read, so a replay builds the same prompt.
 */
export function promptWindow(contextWindow: number, state: Pick<ModelState, 'turn_tokens' | 'window_scale'>): number {
  return Math.max(256, Math.floor((contextWindow * (state.window_scale ?? 1)) / promptUndercount(state)));
}

/** How far the server's count of earlier prompts exceeded the builder's estimate (at least 1), from the recorded turns. */
export function promptUndercount(state: Pick<ModelState, 'turn_tokens'>): number {
  const ratios = state.turn_tokens.filter((t) => t.reported !== undefined && t.prompt > 0).map((t) => t.reported! / t.prompt);
  return Math.max(1, ...ratios);
}

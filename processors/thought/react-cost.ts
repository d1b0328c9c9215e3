/**
 * What a react run's model answers cost and which model gave them (the price table, prices.ts), and
 * the most a turn may cost (the money budget). Pure.
 */
import type { Verdict } from '../../schemas/types.gen.ts';
import { jsonField } from '../../runtime/json-field.ts';
import { priceOf, roundMoney, turnCeiling, usageCost, type PricedUsage } from './prices.ts';
import type { ModelLoopConfig, ModelState, ReactSkill } from './react-types.ts';

/**
 * The model that answered a turn: the completion's own `model`, else the one the request named (the
 * skill's), else the configured model of the tool that answered (primary or fallback); `unknown`
 * when none is known.
 */
export function answeredModel(
  verdict: Pick<Verdict, 'tool' | 'fallback_from'>,
  answer: { model?: string | null },
  skill: Pick<ReactSkill, 'model'>,
  loop: Pick<ModelLoopConfig, 'models'>,
): string {
  if (answer.model) return answer.model;
  const fromFallback = verdict.fallback_from !== null && (loop.models?.fallbackTool === undefined || verdict.tool === loop.models.fallbackTool);
  if (fromFallback) return loop.models?.fallback ?? 'unknown';
  return skill.model ?? loop.models?.primary ?? 'unknown';
}

/** A money figure as the reasons show it (up to 6 decimals, no trailing zeros). */
export function money(x: number): string {
  return String(Number(x.toFixed(6)));
}

/**
 * The most the next turn can cost: `promptTokens` at the input price and `maxTokens` at the output
 * price of the model that will be asked (the skill's, else TAO_LLM_MODEL), or of the fallback model
 * when that costs more (Action may ask it). Null when neither is priced.
 */
export function turnCeilingOf(
  skill: Pick<ReactSkill, 'model'>,
  loop: Pick<ModelLoopConfig, 'prices' | 'models'>,
  promptTokens: number,
  maxTokens: number,
): { model: string; cost: number; promptTokens: number } | null {
  if (!loop.prices) return null;
  let best: { model: string; cost: number; promptTokens: number } | null = null;
  for (const model of [skill.model ?? loop.models?.primary, loop.models?.fallback]) {
    const price = priceOf(loop.prices, model);
    if (!model || !price) continue;
    const cost = turnCeiling(price, promptTokens, maxTokens);
    if (!best || cost > best.cost) best = { model, cost, promptTokens };
  }
  return best;
}

/**
 * What a model verdict's answer cost, by the model that answered: a verified answer's usage, or the
 * usage Observation recorded of an answer its gate rejected (`spent`). Priced by the answering
 * model's entry, else by the entry of the model the tool asked. Null without a price table, usage
 * or a price.
 */
export function answerCost(
  verdict: Pick<Verdict, 'tool' | 'fallback_from' | 'valid' | 'extracted_data_json' | 'step_id'>,
  skill: Pick<ReactSkill, 'model'>,
  loop: Pick<ModelLoopConfig, 'prices' | 'models'>,
): { model: string; cost: number } | null {
  if (!loop.prices || verdict.extracted_data_json === null) return null;
  const data = jsonField(verdict.extracted_data_json, `verdicts[${verdict.step_id}].extracted_data_json`) as {
    usage?: PricedUsage;
    model?: string | null;
    spent?: { usage?: PricedUsage; model?: string | null };
  } | null;
  const paid = verdict.valid ? data : data?.spent;
  if (!paid?.usage) return null;
  const model = answeredModel(verdict, { model: paid.model ?? null }, skill, loop);
  const price = priceOf(loop.prices, model) ?? priceOf(loop.prices, answeredModel(verdict, { model: null }, skill, loop));
  return price ? { model, cost: usageCost(price, paid.usage) } : null;
}

/** `state` with the cost of `verdict`'s answer added (unchanged when it is not priced). */
export function charged(state: ModelState, verdict: Verdict, skill: ReactSkill, loop: ModelLoopConfig): ModelState {
  if (!loop.prices) return state;
  const paid = answerCost(verdict, skill, loop);
  const cost = roundMoney((state.cost ?? 0) + (paid?.cost ?? 0));
  const costs = paid ? { ...state.costs, [paid.model]: roundMoney((state.costs?.[paid.model] ?? 0) + paid.cost) } : (state.costs ?? {});
  return { ...state, cost, costs };
}

/**
 * What model turns cost: the price table (TAO_LLM_PRICES) and the arithmetic, pure (no I/O: the
 * stage's wiring reads the file, Thought's core and replay price recorded usage with it).
 *
 * The table is a JSON object of model name → prices per million tokens, in whatever currency the
 * operator keeps accounts in (every money figure, the budget included, is in it):
 *
 * ```json
 * { "gpt-4o-mini": { "input": 0.15, "cached": 0.075, "output": 0.60 },
 *   "*": { "input": 1, "output": 4 } }
 * ```
 *
 * `input` prices prompt tokens, `cached` the prompt tokens the server served from its prompt cache
 * (`usage.prompt_tokens_details.cached_tokens`; default: the input price), `output` completion
 * tokens. A model is priced by its own entry, else by the longest entry it starts with followed by
 * `-`, `:`, `@`, `/` or `.` (`gpt-4o-mini` prices `gpt-4o-mini-2024-07-18`), else by `*`.
 */
import { ConfigError } from '../../runtime/errors.ts';

export interface ModelPrice {
  /** Per million prompt tokens. */
  input: number;
  /** Per million completion tokens. */
  output: number;
  /** Per million prompt tokens served from the prompt cache; default the input price. */
  cached?: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** Token counts of one answer, as the server reported them. */
export interface PricedUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
}

/**
 * The price table in `text` (JSON), checked.
 * @param where what to name in the error: `TAO_LLM_PRICES` or `TAO_LLM_PRICES file /etc/tao/prices.json`
 * @throws ConfigError with one line naming the model and the field that is wrong
 */
export function parsePriceTable(text: string, where: string): PriceTable {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${where} is not valid JSON (${(err as Error).message})`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(`${where} must be a JSON object of model name -> {"input", "output", "cached"?} prices per million tokens`);
  const table: Record<string, ModelPrice> = {};
  for (const [model, price] of Object.entries(doc as Record<string, unknown>)) {
    if (model.trim() === '') throw new ConfigError(`${where}: a model name is empty`);
    if (price === null || typeof price !== 'object' || Array.isArray(price))
      throw new ConfigError(`${where}: "${model}" must be an object {"input", "output", "cached"?} of prices per million tokens`);
    const p = price as Record<string, unknown>;
    for (const key of Object.keys(p))
      if (!['input', 'output', 'cached'].includes(key))
        throw new ConfigError(`${where}: "${model}" has an unknown key "${key}" (allowed: input, output, cached)`);
    for (const key of ['input', 'output', 'cached'] as const) {
      const v = p[key];
      if (v === undefined && key === 'cached') continue;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
        throw new ConfigError(`${where}: "${model}"."${key}" must be a number >= 0 (price per million tokens), got ${JSON.stringify(v) ?? 'nothing'}`);
    }
    table[model] = { input: p.input as number, output: p.output as number, ...(p.cached === undefined ? {} : { cached: p.cached as number }) };
  }
  return table;
}

/** The price of `model` by the table's rules (its entry, the longest prefix entry, `*`), or null. */
export function priceOf(table: PriceTable, model: string | null | undefined): ModelPrice | null {
  if (!model) return null;
  if (Object.hasOwn(table, model)) return table[model]!;
  let best: string | null = null;
  for (const key of Object.keys(table)) {
    if (key === '*' || key.length >= model.length || !model.startsWith(key)) continue;
    if (!'-:@/.'.includes(model[key.length]!)) continue;
    if (best === null || key.length > best.length) best = key;
  }
  if (best !== null) return table[best]!;
  return Object.hasOwn(table, '*') ? table['*']! : null;
}

/** What one answer cost: uncached prompt tokens at input, cached ones at the cached price, completion at output. */
export function usageCost(price: ModelPrice, usage: PricedUsage): number {
  const cached = Math.min(Math.max(0, usage.cached_tokens ?? 0), usage.prompt_tokens);
  const cost = ((usage.prompt_tokens - cached) * price.input + cached * (price.cached ?? price.input) + usage.completion_tokens * price.output) / 1e6;
  return roundMoney(cost);
}

/** The most a turn can cost: `promptTokens` at the input price and all of `maxTokens` at the output price. */
export function turnCeiling(price: ModelPrice, promptTokens: number, maxTokens: number): number {
  return roundMoney((promptTokens * price.input + maxTokens * price.output) / 1e6);
}

/** Rounded to 1e-9, so sums are the same on every platform and in every replay. */
export function roundMoney(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

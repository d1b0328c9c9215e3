/**
 * The prompt of a model turn: a pure function from what the run knows (its task, the
 * skill, the facts the user gave, the earlier turns and their observations, reflections) to an
 * OpenAI chat-completions request that fits a context window.
 *
 * The window is shared out in fixed shares: system 20%, skill 15%, tool results 30%,
 * history 25%, generation 10% (the request's `max_tokens`). A section that needs less than its
 * share lends the rest to tool results, then history. When the prompt is over, it is compacted
 * deterministically, oldest first:
 *   1. observations of older turns are reduced to their extracted fields (or their error);
 *   2. long tool outputs are cut, with a marker saying how much was cut;
 *   3. the oldest turns are folded into one line each in a summary, then the summary itself is cut
 *      to a count of omitted turns.
 * The task text and the facts (extracted slots, values the user gave) are never dropped: they sit
 * in the system section, and when they alone do not fit the prompt window the result says so
 * (`overflow`) instead of cutting them.
 *
 * No I/O, no clock, no randomness: the same input always gives the same bytes, so a replay
 * rebuilds exactly the prompt that was recorded.
 *
 * In this file, in order: the runtime's rules, what a prompt is built from and what it builds, the
 * token estimate the shares are counted in, the builder, and how a run's recorded turns become the
 * builder's input (`promptTurns`). The window it builds for is the turn's bound (turn.ts
 * `promptWindow`); the messages' wire shapes are model-wire.ts's.
 */
import type { RunState } from '../../../schemas/types.gen.ts';
import { resolveReferences, type Plan } from '../../plan.ts';
import {
  ASK_CUSTOMER_TOOL,
  FINAL_ANSWER,
  FORMAT,
  PLAN_RESPONSE_SCHEMA,
  REFLECTION_SCHEMA,
  finalAnswerTool,
  toWireName,
  turnSchema,
  type ChatMessage,
  type ModelAnswer,
  type WireTool,
} from '../../model-wire.ts';
import { LANGUAGE_NAMES, type Language } from '../language.ts';
import { callStep, isModelStep, turnOf, type PromptTool, type SectionTokens, type TurnContext } from './state.ts';

export { fromWireName, PLAN_RESPONSE_SCHEMA, REFLECTION_SCHEMA, toWireName } from '../../model-wire.ts';

/** Runtime rules at the top of every system prompt. */
export const DEFAULT_SYSTEM_RULES = [
  'You resolve a customer-service ticket by calling the tools you are given, then answering.',
  'Each turn, either call one or more tools (calls in the same turn run in parallel) or give the final answer.',
  'A final answer needs tool results behind it: say only what the ticket or a tool result says.',
  'Use only values from the ticket, the facts below, or earlier tool results. Never invent an id.',
  'Do not call a tool again with the same arguments: its result will not change.',
  'A tool result that is an error object means the call failed; decide what to do about it.',
  'Write the final answer and any question to the customer in the language of the ticket.',
].join('\n');

/** What a plan turn adds to the runtime's rules (the system prompt's first part). */
export const PLAN_TURN_RULES = [
  'This turn is a planning turn: do not call tools now. Answer with the whole plan as one JSON object that matches the response format:',
  '{"steps":[{"id":"S1","tool":"<tool>","input":{...},"depends_on":[]}, ...],"output":{"<field>":"{{S1.<field>}}"}}',
  '- tool is the name of one of the tools listed (orders__get or orders.get); input satisfies its parameters.',
  '- An input value may be {{<step>.<field>}}, a field of a step it depends on (its result); each output field is exactly one such reference.',
  '- Steps run as soon as their dependencies have finished; "when": {"step","path","equals"|"in"|"notEquals"} on a dependency runs a step only if the condition holds on its result (path is a JSON pointer, e.g. "/status").',
  '- Calls that already ran keep their results: reference them by their call id ({{M1_S1.<field>}}) instead of calling again.',
].join('\n');

// What a prompt is built from, and what it builds.

/** One tool call the model made, and what Observation found of its result. */
export interface PromptCall {
  /** The model's tool_call id. */
  id: string;
  /** Catalog name. */
  tool: string;
  arguments: Record<string, unknown>;
  /** Observation's verdict on the result. */
  valid: boolean;
  /** The fields Observation extracted from a valid result. */
  extracted: Record<string, unknown> | null;
  /** The tool's answer as received (a JSON text, an error page, ...). */
  raw: string;
  /** Observation's error type and message for an invalid result. */
  error: string | null;
}

/** One earlier model turn: what the model said and the calls it made, with their observations. */
export interface PromptTurn {
  turn: number;
  /** The assistant's text beside its tool calls (its reasoning), or the final answer Thought rejected, if any. */
  content: string | null;
  calls: PromptCall[];
  /** The gate rejected this turn's answer: why, told to the model in a user turn after it. */
  rejected?: { error: string; evidence: string };
  /** The model asked the customer (`ask_customer`): its question, then the customer's reply as a user turn. */
  asked?: { question: string; reply: string | null };
}

/** Everything a model turn is built from. */
export interface PromptInput {
  /** Fixed rules of the runtime (how to answer, what a final answer holds). */
  system: string;
  skill: { ref: string; prompt: string; tools: PromptTool[] };
  /** The run's text: the task and any replies. Protected. */
  task: string;
  /** Extracted slots and values the user gave. Protected. */
  facts: Record<string, string>;
  /** Earlier turns, oldest first. */
  turns: PromptTurn[];
  /** Reflections written so far (model-written or rule-based), oldest first. */
  reflections: string[];
  /**
   * `react` asks for tool calls or a final answer; `reflection` asks for a structured reflection;
   * `plan` asks for a whole plan as JSON (the tools are listed so the model sees their contracts,
   * with `tool_choice: none`).
   */
  mode: 'react' | 'reflection' | 'plan';
  /**
   * How a react turn asks for tool calls: `native` offers `tools` (and `ask_customer`);
   * `json_schema` asks for a `response_format` that is one call, a final answer or a question
   * (model-wire.ts `turnSchema`), with the tools described in the system message. Default native.
   */
  toolCalls?: 'native' | 'json_schema';
  /**
   * The skill's output schema (skills/<name>/output.schema.json), if it declares one: a react turn's
   * final answer is then a `final_answer` call with arguments of that schema (native), or a
   * `final_answer` object of it (constrained), never plain text.
   */
  output?: Record<string, unknown>;
  /**
   * False while no verified result of the skill's grounded-by tools could ground a final answer
   * (checks.ts `groundable`): a react turn then offers only tool calls and a question (no final-answer
   * branch in the constrained schema, no `final_answer` tool), and says why. Default true.
   */
  answerable?: boolean;
  /** False: a react turn offers no `ask_customer` either (the turn after a reflection that chose to act). Default true. */
  askable?: boolean;
  /** The ticket's language when it is clear and not English (reading.ts): the prompt says to answer in it. */
  language?: Language;
  /** The verified values a final answer may state (answer-sheet.ts): the last message of a react turn that offers a final answer. */
  sheet?: string;
  /** Calls verified results give every required argument of (checks.ts `callableNow`): named last in a react turn that may not answer yet. */
  callable?: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>;
}
/** The result of {@link buildPrompt}. */
export interface BuiltPrompt {
  messages: ChatMessage[];
  /** Empty for a reflection turn and a constrained (`json_schema`) turn. */
  tools: WireTool[];
  /** `response_format` for a reflection or plan turn. */
  responseFormat: Record<string, unknown> | null;
  maxTokens: number;
  tokens: SectionTokens;
  /** What compaction did, for the record. */
  compaction: { reducedObservations: number; cutOutputs: number; foldedTurns: number; omittedTurns: number; skillCut: boolean };
  /** True when the protected sections alone exceed the prompt window: the prompt is not sendable. */
  overflow: boolean;
}

// The token estimate.

const CJK = /[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]/gu;

/**
 * Estimated tokens of a text: one per CJK character, one per four other characters. Deterministic
 * and model-independent (the builder must not depend on a tokenizer the replay host may lack).
 * Close to BPE tokenizers on English prose; dense JSON can count up to about a third more there,
 * so set a skill's `context-window` below the model's real window by that margin.
 */
export function estimateTokens(text: string): number {
  const cjk = text.match(CJK)?.length ?? 0;
  return cjk + Math.ceil((text.length - cjk) / 4);
}

/** Tokens a message costs beyond its content (role, separators). */
export const MESSAGE_OVERHEAD = 4;
/** Estimated tokens of one chat message: its content, and its tool calls' names and arguments. */
export const messageTokens = (m: ChatMessage): number =>
  MESSAGE_OVERHEAD +
  estimateTokens(m.content) +
  ('tool_calls' in m && m.tool_calls
    ? m.tool_calls.reduce((n, c) => n + estimateTokens(c.function.name) + estimateTokens(c.function.arguments) + MESSAGE_OVERHEAD, 0)
    : 0);

/**
 * Estimated prompt tokens of a chat-completions request (its messages and tools) by the builder's
 * own estimate: what a test or a report uses to check that a recorded prompt fits its window
 * (`promptTokens(messages, tools) + max_tokens <= context-window`).
 */
export function promptTokens(messages: readonly ChatMessage[], tools: readonly WireTool[]): number {
  return messages.reduce((n, m) => n + messageTokens(m), 0) + tools.reduce((n, t) => n + estimateTokens(JSON.stringify(t)), 0);
}

/** Cuts `text` to about `tokens` tokens, ending with a marker that says how many characters were cut. */
export function cutText(text: string, tokens: number): string {
  if (estimateTokens(text) <= tokens) return text;
  let keep = Math.max(0, tokens * 4);
  // CJK text is denser: shrink until it fits, deterministically.
  while (keep > 0 && estimateTokens(text.slice(0, keep)) + 8 > tokens) keep = Math.floor(keep * 0.8);
  return `${text.slice(0, keep)}…[cut ${text.length - keep} chars]`;
}

// The builder.

/** Shares of the context window, as fractions that add up to 1. */
export interface BudgetShares {
  system: number;
  skill: number;
  results: number;
  history: number;
  generation: number;
}

export const SEED_SHARES: BudgetShares = { system: 0.2, skill: 0.15, results: 0.3, history: 0.25, generation: 0.1 };

/** How a native react turn asks the customer (the `ask_customer` tool is offered beside the skill's). */
const NATIVE_RULES = 'Give the final answer as plain text. To ask the customer for something the ticket lacks, call ask_customer; the run waits for the reply.';
/** The same, for a skill whose final answer has a schema (the `final_answer` tool is offered). */
const STRUCTURED_RULES =
  'Give the final answer by calling final_answer with arguments that match its schema, never as plain text. To ask the customer for something the ticket lacks, call ask_customer; the run waits for the reply.';

/** The same, before any tool result could ground a final answer (`answerable` false: only calls are offered, `ask_customer` among them). */
const NATIVE_UNANSWERABLE_RULES =
  'No tool has returned what a final answer needs yet: call the tools that look up what the ticket asks. To ask the customer for something the ticket lacks, call ask_customer; the run waits for the reply.';

const FINAL_LINE = '- {"final_answer": "<your reply to the customer>"} once tool results hold everything the reply needs;';
const UNANSWERABLE_LINE = '- (no final answer yet: no tool has returned what the reply needs, so call a tool first);';

/** How a constrained turn answers (model-wire.ts `turnSchema`). */
const CONSTRAINED_RULES = [
  'Answer with exactly one JSON object and nothing else:',
  '- {"tool": "<tool name>", "arguments": {...}} to call one of the tools below;',
  FINAL_LINE,
  '- {"ask_customer": "<your question>"} when the ticket lacks something you need.',
].join('\n');

const json = (v: unknown): string => JSON.stringify(v);

/** Consecutive user messages as one (the roles alternate: strict chat templates refuse two users in a row). */
function joinUserTurns(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    const last = out.at(-1);
    if (m.role === 'user' && last?.role === 'user') out[out.length - 1] = { role: 'user', content: `${last.content}\n\n${m.content}` };
    else out.push(m);
  }
  return out;
}

/** How a native turn that may not answer yet is asked for a call, in its last message. */
const callFormLine = (names: readonly string[]): string =>
  `Reply with one tool call and no other text: {"name": "<tool>", "arguments": {...}}, the tool one of ${names.join(', ')}.`;

/**
 * A tool message: the tool's answer as received, or (reduced) only the fields Observation
 * extracted; a failed call is an object whose `error` says what Observation found.
 */
function observationText(call: PromptCall, reduced: boolean): string {
  if (!call.valid) return json({ error: call.error ?? 'invalid result' });
  if (reduced || !call.raw) return json(call.extracted ?? {});
  return call.raw;
}

function summaryLine(turn: PromptTurn): string {
  if (turn.asked) return `turn ${turn.turn}: asked the customer ${json(turn.asked.question)}; reply: ${json(turn.asked.reply ?? '(none)')}`;
  const calls = turn.calls.map((c) => `${c.tool}(${json(c.arguments)}) -> ${c.valid ? json(c.extracted ?? {}) : `invalid: ${c.error ?? ''}`}`);
  return `turn ${turn.turn}: ${calls.join('; ') || (turn.content ?? '')}`;
}

/**
 * Builds the request of one model turn within `contextWindow` tokens.
 * Never throws for long inputs: it compacts, and sets `overflow` when even the protected
 * sections do not fit.
 */
export function buildPrompt(input: PromptInput, contextWindow: number, shares: BudgetShares = SEED_SHARES): BuiltPrompt {
  const cap = (s: keyof BudgetShares) => Math.floor(contextWindow * shares[s]);
  const maxTokens = Math.max(16, cap('generation'));
  const promptWindow = contextWindow - maxTokens;
  const compaction = { reducedObservations: 0, cutOutputs: 0, foldedTurns: 0, omittedTurns: 0, skillCut: false };

  // System: runtime rules, then the protected facts. Only the rules may be cut.
  const header = `Skill: ${input.skill.ref}${input.mode === 'react' ? '' : `\nTurn: ${input.mode}`}`;
  const factLines = Object.keys(input.facts)
    .sort()
    .map((k) => `- ${k}: ${input.facts[k]}`);
  const factsText =
    (input.language
      ? `\n\nThe ticket is written in ${LANGUAGE_NAMES[input.language]}: write the final answer and any question to the customer in ${LANGUAGE_NAMES[input.language]}.`
      : '') + (factLines.length ? `\n\nFacts the user gave (keep them in mind):\n${factLines.join('\n')}` : '');
  const protectedTokens = estimateTokens(header + factsText) + estimateTokens(input.task) + 2 * MESSAGE_OVERHEAD;
  const rules = cutText(input.system, Math.max(0, cap('system') - protectedTokens));

  // Skill: its prompt and the tools it allows (the tool list is sent whole: a tool the model
  // cannot see is a tool it cannot call).
  const constrained = input.mode === 'react' && input.toolCalls === 'json_schema';
  const answerable = input.mode !== 'react' || input.answerable !== false;
  const offered: PromptTool[] =
    input.mode === 'reflection'
      ? []
      : input.mode === 'react'
        ? [
            ...input.skill.tools,
            ...(input.askable === false ? [] : [ASK_CUSTOMER_TOOL]),
            ...(input.output && answerable ? [finalAnswerTool(input.output)] : []),
          ]
        : input.skill.tools;
  const wireTools: WireTool[] = offered.map((t) => ({
    type: 'function',
    function: { name: toWireName(t.name), description: t.description, parameters: t.parameters },
  }));
  const tools = constrained ? [] : wireTools;
  // While calls are due (and no answer could stand), a constrained turn's schema offers those tools
  // only; the tool list above stays whole, so the prompt's prefix is the same. Offered every tool,
  // the 1.5B called crm.find_customer with an invented e-mail three times, O-10293847 in the ticket.
  const due = input.mode === 'react' && !answerable ? (input.callable ?? []).map((c) => toWireName(c.tool)) : [];
  // A constrained turn sends no `tools`: the model reads them here, and the schema holds their parameters.
  const rulesText = !answerable
    ? CONSTRAINED_RULES.replace(FINAL_LINE, UNANSWERABLE_LINE)
    : input.output
      ? CONSTRAINED_RULES.replace('{"final_answer": "<your reply to the customer>"}', `{"final_answer": {...}} (an object matching ${json(input.output)})`)
      : CONSTRAINED_RULES;
  const toolList = constrained
    ? `\n\n${rulesText}\nTools:\n${input.skill.tools.map((t) => `- ${toWireName(t.name)}: ${t.description} Arguments: ${json(t.parameters)}`).join('\n')}`
    : '';
  const toolTokens = constrained ? estimateTokens(toolList) : tools.reduce((n, t) => n + estimateTokens(json(t)), 0);
  const skillRoom = Math.max(0, cap('skill') - toolTokens);
  const skillPrompt = cutText(input.skill.prompt, skillRoom);
  compaction.skillCut = skillPrompt !== input.skill.prompt;

  const nativeRules = !answerable ? NATIVE_UNANSWERABLE_RULES : input.output ? STRUCTURED_RULES : NATIVE_RULES;
  const systemText = `${header}\n\n${rules}${constrained ? '' : input.mode === 'react' ? `\n${nativeRules}` : ''}\n\n${skillPrompt}${toolList}${factsText}`;
  const systemTokens = estimateTokens(`${header}\n\n${rules}${factsText}`) + estimateTokens(input.task) + 2 * MESSAGE_OVERHEAD;
  const skillTokens = estimateTokens(skillPrompt) + toolTokens;
  const lent = Math.max(0, cap('system') - systemTokens) + Math.max(0, cap('skill') - skillTokens);
  let resultsRoom = cap('results') + lent;
  let historyRoom = cap('history');
  // Whatever is left of the prompt window after system and skill bounds the other two as well.
  const rest = promptWindow - systemTokens - skillTokens;
  if (resultsRoom + historyRoom > rest) {
    const scale = Math.max(0, rest) / (resultsRoom + historyRoom);
    resultsRoom = Math.floor(resultsRoom * scale);
    historyRoom = Math.floor(historyRoom * scale);
  }

  // History and results, compacted until both fit their rooms.
  const turns = input.turns;
  const reduced = new Set<number>();
  const cuts = new Map<string, number>();
  let folded = 0;
  let omitted = false;
  const reflectionsText = input.reflections.length ? `Reflections so far:\n${input.reflections.map((r, i) => `${i + 1}. ${r}`).join('\n')}` : '';

  // What the last message adds: the verified values once a final answer is offered; in a native
  // turn that may not answer yet, the call's form (under a skill's whole prompt the 1.5B answered in
  // prose, where a short request got a JSON call); the ticket's language. On the first turn it is the
  // ticket's message.
  const tail =
    (input.sheet && input.mode === 'react' && answerable ? `\n\n${input.sheet}` : '') +
    (input.mode === 'react' && !constrained && !answerable ? `\n(${callFormLine(offered.map((t) => toWireName(t.name)))})` : '') +
    (input.mode === 'react' && !answerable && input.callable?.length
      ? `\n(Calls you can make now with values the ticket or the results gave: ${input.callable.map((c) => `${toWireName(c.tool)} ${json(c.arguments)}`).join('; ')}.)`
      : '') +
    (input.language ? `\n(Write the final answer in ${LANGUAGE_NAMES[input.language]}.)` : '');
  const render = () => {
    const history: ChatMessage[] = [];
    const results: ChatMessage[] = [];
    const all: ChatMessage[] = [];
    const summary = omitted
      ? `Earlier turns: ${folded} omitted (their facts are listed above).`
      : folded
        ? `Earlier turns (compacted):\n${turns.slice(0, folded).map(summaryLine).join('\n')}`
        : '';
    // The notes join the one system message (a second system message breaks strict templates); they count as history.
    const notes = [summary, reflectionsText].filter(Boolean).join('\n\n');
    const push = (m: ChatMessage, section: ChatMessage[]) => {
      section.push(m);
      all.push(m);
    };
    turns.slice(folded).forEach((t, i) => {
      const index = folded + i;
      if (t.rejected) {
        const feedback = `Your last answer was rejected before anything ran (${t.rejected.error}): ${t.rejected.evidence}\n${constrained ? 'Answer again with one JSON object.' : answerable ? 'Answer again: call a tool, ask the customer, or give the final answer.' : 'Answer again: call a tool or ask the customer.'}`;
        // The feedback joins the user's turn; the refused answer itself is not shown again (the
        // feedback quotes what was wrong with it). Shown its refused answer, the 1.5B wrote it again
        // word for word three times, sampled or not ("… in transit with UPS"); shown a stand-in text
        // ("[answer rejected: …]") where the gate refused one, it wrote "[answer accepted]".
        push({ role: 'user', content: feedback }, history);
        return;
      }
      if (t.asked) {
        push({ role: 'assistant', content: constrained ? json({ ask_customer: t.asked.question }) : t.asked.question }, history);
        if (t.asked.reply !== null) push({ role: 'user', content: t.asked.reply }, history);
        return;
      }
      const observed = t.calls.map((c) => {
        const text = observationText(c, reduced.has(index));
        const cut = cuts.get(c.id);
        return cut === undefined ? text : cutText(text, cut);
      });
      if (constrained) {
        // No `tools` in a constrained run: calls are the JSON the model wrote, results a user turn.
        const written = t.calls.map((c) => json({ tool: toWireName(c.tool), arguments: c.arguments })).join('\n');
        push({ role: 'assistant', content: written || (t.content ?? '') }, history);
        if (t.calls.length) push({ role: 'user', content: t.calls.map((c, k) => `Result of ${toWireName(c.tool)}: ${observed[k]}`).join('\n') }, results);
        return;
      }
      const assistant: ChatMessage = { role: 'assistant', content: t.content ?? '' };
      if (t.calls.length)
        assistant.tool_calls = t.calls.map((c) => ({ id: c.id, type: 'function', function: { name: toWireName(c.tool), arguments: json(c.arguments) } }));
      push(assistant, history);
      t.calls.forEach((c, k) => push({ role: 'tool', tool_call_id: c.id, content: observed[k]! }, results));
    });
    // Never end on the assistant's turn: a server would continue it as a prefill (llama.cpp) or refuse it.
    if (all.at(-1)?.role === 'assistant') push({ role: 'user', content: 'Continue.' }, history);
    // A small model heeds the last message most: what it needs now is said there (`tail`).
    const last = all.at(-1);
    if (tail && last?.role === 'user') last.content = `${last.content ?? ''}${tail}`;
    // After a native turn's tool results: a user message of its own (OpenAI's API and the chat templates allow one after tool messages).
    else if (tail && last?.role === 'tool') push({ role: 'user', content: tail.trim() }, history);
    const sum = (ms: ChatMessage[]) => ms.reduce((n, m) => n + messageTokens(m), 0);
    const notesTokens = notes ? estimateTokens(notes) : 0;
    return { all, notes, historyTokens: sum(history) + notesTokens, resultsTokens: sum(results) };
  };

  let r = render();
  // 1. Older turns' observations down to their extracted fields, oldest first.
  for (let i = folded; r.resultsTokens > resultsRoom && i < turns.length - 1; i++) {
    reduced.add(i);
    compaction.reducedObservations += turns[i]!.calls.length;
    r = render();
  }
  // 2. Cut long outputs: every result gets an equal slice of the room.
  if (r.resultsTokens > resultsRoom) {
    const calls = turns.slice(folded).flatMap((t) => t.calls);
    const slice = Math.max(24, Math.floor(resultsRoom / Math.max(1, calls.length)) - MESSAGE_OVERHEAD);
    for (const c of calls) {
      cuts.set(c.id, slice);
      compaction.cutOutputs++;
    }
    r = render();
  }
  // 3. Fold the oldest turns into summary lines until both sections fit (the last turn stays whole).
  while ((r.resultsTokens > resultsRoom || r.historyTokens + r.resultsTokens > resultsRoom + historyRoom) && folded < turns.length - 1) {
    folded++;
    r = render();
  }
  if (r.historyTokens + r.resultsTokens > resultsRoom + historyRoom && folded > 0) {
    omitted = true;
    r = render();
  }
  compaction.foldedTurns = omitted ? 0 : folded;
  compaction.omittedTurns = omitted ? folded : 0;

  const messages: ChatMessage[] = joinUserTurns([
    { role: 'system', content: r.notes ? `${systemText}\n\n${r.notes}` : systemText },
    { role: 'user', content: r.all.length ? input.task : `${input.task}${tail}` },
    ...r.all,
  ]);
  const tokens: SectionTokens = {
    system: systemTokens,
    skill: skillTokens,
    results: r.resultsTokens,
    history: r.historyTokens + (r.all.length ? 0 : estimateTokens(tail)),
    generation: maxTokens,
    prompt: systemTokens + skillTokens + r.resultsTokens + r.historyTokens + (r.all.length ? 0 : estimateTokens(tail)),
  };
  return {
    messages,
    tools,
    responseFormat:
      input.mode === 'reflection'
        ? { type: 'json_schema', json_schema: { name: FORMAT.reflection, strict: true, schema: REFLECTION_SCHEMA } }
        : input.mode === 'plan'
          ? { type: 'json_schema', json_schema: { name: FORMAT.plan, strict: false, schema: PLAN_RESPONSE_SCHEMA } }
          : constrained
            ? {
                type: 'json_schema',
                json_schema: {
                  name: FORMAT.turn,
                  strict: false,
                  schema: turnSchema(
                    wireTools
                      .filter((t) => t.function.name !== ASK_CUSTOMER_TOOL.name && t.function.name !== FINAL_ANSWER)
                      .filter((t) => !due.length || due.includes(t.function.name))
                      .map((t) => ({ wire: t.function.name, parameters: t.function.parameters })),
                    input.output,
                    answerable,
                    input.askable !== false,
                  ),
                },
              }
            : null,
    maxTokens,
    tokens,
    compaction,
    overflow: protectedTokens > promptWindow || tokens.prompt > promptWindow,
  };
}

// What a run's next prompt is built from: only recorded data, so a replay builds the same prompt.

/**
 * The earlier turns for the prompt builder: each with its tool calls and what each call found, and
 * each rejected answer with what was wrong with it (the builder tells the model why, without showing
 * the refused answer again: a small model copies it).
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
      // The arguments the call ran with: an approver may have edited the model's.
      const ran = plan.steps.find((s) => s.id === id)?.input as Record<string, unknown> | undefined;
      return {
        id: c.id,
        tool: c.tool,
        arguments: ran ?? c.arguments,
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

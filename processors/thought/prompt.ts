/**
 * The prompt builder of a model turn: a pure function from what the run knows (its task, the
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
 * Beside it: prompt-types.ts (what a prompt is built from and what it builds) and prompt-tokens.ts
 * (the token estimate the shares are counted in).
 */
import { ASK_CUSTOMER_TOOL, FINAL_ANSWER, FORMAT, PLAN_RESPONSE_SCHEMA, REFLECTION_SCHEMA, finalAnswerTool, toWireName, turnSchema } from '../model-wire.ts';
import type { BuiltPrompt, ChatMessage, PromptCall, PromptInput, PromptTool, PromptTurn, SectionTokens, WireTool } from './prompt-types.ts';
import { MESSAGE_OVERHEAD, cutText, estimateTokens, messageTokens } from './prompt-tokens.ts';

export { fromWireName, PLAN_RESPONSE_SCHEMA, REFLECTION_SCHEMA, toWireName } from '../model-wire.ts';

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

/** How a constrained turn answers (model-wire.ts `turnSchema`). */
const CONSTRAINED_RULES = [
  'Answer with exactly one JSON object and nothing else:',
  '- {"tool": "<tool name>", "arguments": {...}} to call one of the tools below;',
  '- {"final_answer": "<your reply to the customer>"} once tool results hold everything the reply needs;',
  '- {"ask_customer": "<your question>"} when the ticket lacks something you need.',
].join('\n');

const json = (v: unknown): string => JSON.stringify(v);

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
  const factsText = factLines.length ? `\n\nFacts the user gave (keep them in mind):\n${factLines.join('\n')}` : '';
  const protectedTokens = estimateTokens(header + factsText) + estimateTokens(input.task) + 2 * MESSAGE_OVERHEAD;
  const rules = cutText(input.system, Math.max(0, cap('system') - protectedTokens));

  // Skill: its prompt and the tools it allows (the tool list is sent whole: a tool the model
  // cannot see is a tool it cannot call).
  const constrained = input.mode === 'react' && input.toolCalls === 'json_schema';
  const offered: PromptTool[] =
    input.mode === 'reflection'
      ? []
      : input.mode === 'react'
        ? [...input.skill.tools, ASK_CUSTOMER_TOOL, ...(input.output ? [finalAnswerTool(input.output)] : [])]
        : input.skill.tools;
  const wireTools: WireTool[] = offered.map((t) => ({
    type: 'function',
    function: { name: toWireName(t.name), description: t.description, parameters: t.parameters },
  }));
  const tools = constrained ? [] : wireTools;
  // A constrained turn sends no `tools`: the model reads them here, and the schema holds their parameters.
  const rulesText = input.output
    ? CONSTRAINED_RULES.replace('{"final_answer": "<your reply to the customer>"}', `{"final_answer": {...}} (an object matching ${json(input.output)})`)
    : CONSTRAINED_RULES;
  const toolList = constrained
    ? `\n\n${rulesText}\nTools:\n${input.skill.tools.map((t) => `- ${toWireName(t.name)}: ${t.description} Arguments: ${json(t.parameters)}`).join('\n')}`
    : '';
  const toolTokens = constrained ? estimateTokens(toolList) : tools.reduce((n, t) => n + estimateTokens(json(t)), 0);
  const skillRoom = Math.max(0, cap('skill') - toolTokens);
  const skillPrompt = cutText(input.skill.prompt, skillRoom);
  compaction.skillCut = skillPrompt !== input.skill.prompt;

  const systemText = `${header}\n\n${rules}${constrained ? '' : input.mode === 'react' ? `\n${input.output ? STRUCTURED_RULES : NATIVE_RULES}` : ''}\n\n${skillPrompt}${toolList}${factsText}`;
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
        push({ role: 'assistant', content: t.content ?? `[answer rejected: ${t.rejected.error}]` }, history);
        push(
          {
            role: 'user',
            content: `Your last answer was rejected before anything ran (${t.rejected.error}): ${t.rejected.evidence}\n${constrained ? 'Answer again with one JSON object.' : 'Answer again: call a tool, ask the customer, or give the final answer.'}`,
          },
          history,
        );
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

  const messages: ChatMessage[] = [
    { role: 'system', content: r.notes ? `${systemText}\n\n${r.notes}` : systemText },
    { role: 'user', content: input.task },
    ...r.all,
  ];
  const tokens: SectionTokens = {
    system: systemTokens,
    skill: skillTokens,
    results: r.resultsTokens,
    history: r.historyTokens,
    generation: maxTokens,
    prompt: systemTokens + skillTokens + r.resultsTokens + r.historyTokens,
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
                      .map((t) => ({ wire: t.function.name, parameters: t.function.parameters })),
                    input.output,
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

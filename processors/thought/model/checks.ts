/**
 * The checks Thought makes on a model's answer before anything acts on it, beyond the gate's
 * (Observation checks the answer's form, the tools it names and their argument contracts). Each is
 * pure and decided on recorded data only (the run's task text, the customer's replies, verified
 * tool results), so `tao replay --verify` re-decides it.
 *
 * Grounding: a skill may name tools one of whose verified results a final answer needs
 * (metadata.grounded-by); a final answer before any of them returned one goes back to the model.
 *
 * Argument provenance, the one rule for where a value that selects a customer's data may come from:
 * a tool's catalog entry names its identity parameters (`identity_parameters`: an order, claim or
 * invoice id, an e-mail address, a customer id). A model's call may carry such a value only when the
 * value was given to the run: in the ticket, in a customer's reply, or in a verified result of an
 * earlier tool call of the run (never in a model's own answer). Anything else is a value the model
 * made up or copied from an example, and calling with it would fetch (or change) somebody else's
 * data, so the call is refused before any tool runs and the model is told to ask the customer.
 * Matching is exact up to case and surrounding whitespace; in free text the value must not run into
 * ASCII letters or digits (`O-12345678` does not match inside `O-123456789`; it does inside
 * `订单O-12345678到哪了`).
 *
 * Answer facts (reading.ts `answerFactProblems`): every specific of a final answer (ids, e-mails,
 * dates, times, numbers, states, acronyms) must be supported by what the run was given or by a
 * verified tool result of the run; the answer must be in the ticket's language when both are clear;
 * one that says something was done needs a verified result of a tool with side effects; and a
 * skill's `answer-states` name the values its answer must state (reading.ts `omittedStates`).
 */
import type { RunState } from '../../../schemas/types.gen.ts';
import type { Plan } from '../../plan.ts';
import { toWireName, type ModelAnswer } from '../../model-wire.ts';
import type { Outputs } from '../run-end.ts';
import { isModelStep, type ModelState, type ReactSkill, type TurnContext } from './state.ts';
import { LANGUAGE_NAMES, languageOf } from '../language.ts';
import { answerSheet } from '../answer-sheet.ts';
import { answerFactProblems, claimedAction, containsToken, factsEvidence, omittedStates, onlyValues, statesAnyValue, type VerifiedResult } from '../reading.ts';

// The checks as Thought runs them on an answer.

/**
 * Why a final answer cannot complete the run (null when it can): it is not grounded yet, or it states
 * specifics that nothing the run was given or verified supports (answer facts, below).
 */
export function finalAnswerProblem(
  answer: Extract<ModelAnswer, { kind: 'final' }>,
  ctx: TurnContext,
  state: ModelState,
  outputs: Outputs,
): { error: 'ungrounded' | 'unsupported_fact' | 'wrong_language' | 'incomplete_answer'; evidence: string } | null {
  const why = ungrounded(ctx.skill, ctx.plan, outputs, refusedTools(state));
  if (why) return { error: 'ungrounded', evidence: why };
  // The customer reads the answer: it is written in the ticket's language when both are clear.
  const asked = languageOf(state.opening ?? ctx.run.task_text);
  const written = languageOf(answer.content ?? '');
  if (asked && written && asked !== written)
    return {
      error: 'wrong_language',
      evidence: `the ticket is in ${LANGUAGE_NAMES[asked]} and the answer in ${LANGUAGE_NAMES[written]}: write the final answer in ${LANGUAGE_NAMES[asked]}`,
    };
  // A small model told why its answer was refused may answer with the telling itself.
  const echoed = RUNTIME_FEEDBACK.find((phrase) => (answer.content ?? '').toLowerCase().includes(phrase));
  if (echoed)
    return {
      error: 'unsupported_fact',
      evidence: `the answer repeats the runtime's feedback ("${echoed}") instead of answering the customer: answer the ticket from the tool results`,
    };
  const results = verifiedResults(ctx, outputs);
  const text = [answer.content ?? '', answer.result ? JSON.stringify(answer.result) : ''].join('\n');
  const problems = answerFactProblems(text, givenValues(ctx.run, state, outputs), results);
  if (problems.length) return { error: 'unsupported_fact', evidence: factsEvidence(problems) };
  // An answer that says something was done needs the call that did it.
  const claim = unbackedClaim(text, ctx, outputs);
  if (claim)
    return {
      error: 'unsupported_fact',
      evidence: `the answer says "${claim}", but no tool that changes anything returned a verified result in this run: make the call that does it, or do not say it was done`,
    };
  // An answer rewritten after a wrong-language refusal must still answer from the results, not repeat the refusal translated.
  if (state.rejected.some((r) => r.error === 'wrong_language') && results.length && !statesAnyValue(text, results))
    return {
      error: 'unsupported_fact',
      evidence: 'the answer states nothing the tool results hold: answer the ticket from the tool results, in the language of the ticket',
    };
  // A reply to the customer, not a list of values.
  if (results.length && onlyValues(answer.content ?? '', results))
    return {
      error: 'incomplete_answer',
      evidence: 'the answer is only values, not a reply: write one or two full sentences to the customer that state them, in the language of the ticket',
    };
  // The skill's answer contract: the values its answer must state, once their tool has answered.
  const omitted = omittedStates(text, results, ctx.skill.answerStates ?? []);
  if (omitted.length)
    return {
      error: 'incomplete_answer',
      evidence: `the answer leaves out ${omitted.map((o) => `${o.tool}'s ${o.field} (${o.value})`).join(', ')}: state ${omitted.length > 1 ? 'them' : 'it'} in the final answer`,
    };
  return null;
}

/**
 * Why a question to the customer cannot be asked (null when it can): it says something was done
 * (a reset link sent) that no tool with side effects did in the run. The 1.5B asked a Japanese
 * customer a question claiming a reset link had been sent, with the template's placeholders in it.
 */
export function questionProblem(question: string, ctx: TurnContext, outputs: Outputs): { error: 'unsupported_fact'; evidence: string } | null {
  const claim = unbackedClaim(question, ctx, outputs);
  return claim
    ? {
        error: 'unsupported_fact',
        evidence: `the question says "${claim}", but no tool that changes anything returned a verified result in this run: ask only what you need to know`,
      }
    : null;
}

/** The run's verified tool results (the model's turns aside), each with its tool's response schema. */
function verifiedResults(ctx: TurnContext, outputs: Outputs): VerifiedResult[] {
  const tools = new Map(ctx.plan.steps.map((s) => [s.id, s.tool]));
  return Object.entries(outputs).flatMap(([id, data]) => {
    const tool = tools.get(id);
    return isModelStep(id) || !tool ? [] : [{ tool, data, response: ctx.loop.responseSchema?.(tool) }];
  });
}

/** The verified values a turn that offers a final answer shows last (answer-sheet.ts); null before any result. */
export function answerSheetOf(ctx: TurnContext, outputs: Outputs): string | null {
  return answerSheet(verifiedResults(ctx, outputs), ctx.skill.answerStates ?? [], languageOf(ctx.state.opening ?? ctx.run.task_text));
}

/**
 * Calls the model could make now with what the run was given: each offered tool without side
 * effects (or one the skill's answer-after waits for: the 1.5B, with the customer_id a password reset
 * takes, asked the customer to check their e-mail instead), not yet tried with those arguments
 * (a call that failed for a passing reason, a timeout or a 5xx, is due again), whose required
 * parameters are all fields of verified results (the same name, the latest value) or identity
 * parameters whose value the ticket or a customer's reply gives (a token matching the parameter's
 * `pattern` or e-mail `format`, the last one written). When some are what the skill's answer-after
 * waits for, only those are due. A turn that may not answer yet offers calls only and names them last (prompt.ts): the
 * 1.5B, with `customer_id` from crm.find_customer in front of it, called crm.find_customer again
 * three times instead of orders.latest; offered a question too, it asked for the order id or the
 * e-mail address the ticket had given.
 */
export function callableNow(ctx: TurnContext, outputs: Outputs, offered: readonly string[]): Array<{ tool: string; arguments: Record<string, unknown> }> {
  const values = new Map<string, unknown>();
  for (const r of verifiedResults(ctx, outputs))
    if (r.data && typeof r.data === 'object' && !Array.isArray(r.data))
      for (const [k, v] of Object.entries(r.data)) if (typeof v === 'string' || typeof v === 'number') values.set(k, v);
  const texts = [ctx.state.opening ?? ctx.run.task_text, ...(ctx.state.replies ?? []).map((r) => r.text)].join('\n');
  const steps = ctx.plan.steps.filter((st) => !isModelStep(st.id));
  // Tried: answered, or failed for a reason trying again would not change (a 404, a refused argument).
  const transient = (id: string) => TRANSIENT.has(ctx.run.error_history[id]?.at(-1)?.split(':')[0] ?? '');
  const tried = new Set(steps.filter((st) => !transient(st.id)).map((st) => `${st.tool}\u0000${JSON.stringify(st.input)}`));
  const awaited = pendingAnswerAfter(ctx.skill.answerAfter ?? [], steps, outputs, refusedTools(ctx.state)).map((w) => w.tool);
  const due = offered.flatMap((tool) => {
    const parameters = ctx.loop.toolSpec(tool)?.parameters as { required?: unknown; properties?: Record<string, unknown> } | undefined;
    const required = parameters?.required;
    if (!Array.isArray(required) || !required.length || (ctx.loop.sideEffects?.(tool) && !awaited.includes(tool))) return [];
    const identities = ctx.loop.identityParameters?.(tool) ?? [];
    const valueOf = (p: string) => values.get(p) ?? (identities.includes(p) ? givenIn(texts, parameters?.properties?.[p]) : undefined);
    if (!required.every((p): p is string => typeof p === 'string' && valueOf(p) !== undefined)) return [];
    const args = Object.fromEntries(required.map((p) => [p, valueOf(p)]));
    return tried.has(`${tool}\u0000${JSON.stringify(args)}`) ? [] : [{ tool, arguments: args }];
  });
  // What the answer waits for comes first: offered orders.latest beside shipping.track (the order's
  // customer_id at hand), the 0.5B looked up another order.
  const waitedFor = due.filter((c) => awaited.includes(c.tool));
  return waitedFor.length ? waitedFor : due;
}

/** Failures a later try may not meet: a call that failed so is due again (the Reflexion pattern's timed-out lookup). */
const TRANSIENT = new Set(['timeout', 'rate_limited', 'server_error', 'network_issue', 'circuit_open']);

/** The last token of `text` an identity parameter's schema takes (its `pattern`, or `format: email`); undefined when none does. */
function givenIn(text: string, schema: unknown): string | undefined {
  const { pattern, format } = (schema ?? {}) as { pattern?: unknown; format?: unknown };
  const source = typeof pattern === 'string' ? pattern.replace(/^\^/, '').replace(/\$$/, '') : format === 'email' ? '[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+' : null;
  if (!source) return undefined;
  let found: string | undefined;
  try {
    for (const m of text.matchAll(new RegExp(source, 'g'))) if (containsToken(text, m[0])) found = m[0];
  } catch {
    return undefined; // a pattern JavaScript does not read names no value
  }
  return found;
}

/** The calls of the run that have a verified result, each as `<tool>\u0000<its arguments as JSON>`. */
function answeredCalls(plan: Plan, outputs: Outputs): Set<string> {
  return new Set(plan.steps.filter((st) => !isModelStep(st.id) && outputs[st.id] !== undefined).map((st) => `${st.tool}\u0000${JSON.stringify(st.input)}`));
}

/** The words of `text` that say something was done (reading.ts `claimedAction`) when no tool with side effects returned a verified result in the run; null otherwise. */
function unbackedClaim(text: string, ctx: TurnContext, outputs: Outputs): string | null {
  const sideEffects = ctx.loop.sideEffects;
  const claim = sideEffects ? claimedAction(text) : null;
  if (!claim) return null;
  const tools = new Map(ctx.plan.steps.map((s) => [s.id, s.tool]));
  return Object.keys(outputs).some((id) => !isModelStep(id) && tools.has(id) && sideEffects!(tools.get(id)!)) ? null : claim;
}

/** Phrases of the feedback this file gives the model: an answer holding one repeats it rather than answering. */
const RUNTIME_FEEDBACK = [
  'is in no verified result or the ticket',
  'state only what the tool results say',
  'no tool that changes anything returned',
  'a final answer needs a verified result',
  'the answer repeats the runtime',
  'write the final answer in',
  'was already called in this run',
  'the answer leaves out',
  'the answer states nothing the tool results hold',
];

/**
 * Whether a final answer could be grounded now: one of the skill's grounded-by tools (if it names
 * any) has returned a verified result in this run, and every tool its answer-after names, whose
 * condition holds, was called (or refused by a policy: `tried`). Until then a turn offers no final
 * answer (prompt.ts `answerable`).
 */
export function groundable(skill: Pick<ReactSkill, 'groundedBy' | 'answerAfter'>, plan: Plan, outputs: Outputs, tried: readonly string[] = []): boolean {
  return ungrounded(skill, plan, outputs, tried) === null;
}

/** Tools whose calls a policy refused in this run (their `policy_violation` evidence names them): the answer may say why. */
export function refusedTools(state: Pick<ModelState, 'rejected'>): string[] {
  return state.rejected.flatMap((r) => (r.error === 'policy_violation' ? [...r.evidence.matchAll(/refuses call \d+, (\S+) /g)].map((m) => m[1]!) : []));
}

/** Why a final answer is not grounded yet (null when it is: {@link groundable}). */
function ungrounded(skill: Pick<ReactSkill, 'groundedBy' | 'answerAfter'>, plan: Plan, outputs: Outputs, tried: readonly string[]): string | null {
  const steps = plan.steps.filter((s) => !isModelStep(s.id));
  const needed = skill.groundedBy ?? [];
  if (needed.length && !steps.some((s) => needed.includes(s.tool) && outputs[s.id] !== undefined))
    return `a final answer needs a verified result of ${needed.join(' or ')} first, and none has one yet: call the tool, or ask the customer for what it needs`;
  const waiting = pendingAnswerAfter(skill.answerAfter ?? [], steps, outputs, tried);
  return waiting.length ? `a final answer needs ${waiting.map((w) => w.text).join(', ')} first: call it before answering` : null;
}

type Pending = { tool: string; text: string };
/** The answer-after tools never called whose condition holds, each told as `<tool>` or `<tool> (<condition's tool>'s <field> is <value>)`. */
function pendingAnswerAfter(entries: NonNullable<ReactSkill['answerAfter']>, steps: Plan['steps'], outputs: Outputs, tried: readonly string[]): Pending[] {
  const out: Pending[] = [];
  for (const e of entries) {
    if (tried.includes(e.tool) || steps.some((s) => s.tool === e.tool) || out.some((o) => o.tool === e.tool)) continue;
    if (!e.when) {
      out.push({ tool: e.tool, text: e.tool });
      continue;
    }
    const last = steps.filter((s) => s.tool === e.when!.tool && outputs[s.id] !== undefined).at(-1);
    const value = last ? (outputs[last.id] as Record<string, unknown>)[e.when.field] : undefined;
    if (value === undefined || value === null) continue;
    if (e.when.values && !e.when.values.includes(String(value))) continue;
    out.push({ tool: e.tool, text: `${e.tool} (${e.when.tool}'s ${e.when.field} is ${JSON.stringify(value)})` });
  }
  return out;
}

/** What the run was given that a model's identity arguments may come from: the ticket, the customer's replies, verified tool results. */
function givenValues(run: RunState, state: ModelState, outputs: Outputs): GivenValues {
  const texts = [run.task_text, state.opening ?? '', ...(state.replies ?? []).map((r) => r.text)];
  return { texts, results: Object.entries(outputs).flatMap(([id, out]) => (isModelStep(id) ? [] : [out])) };
}

/**
 * The evidence the model is shown when a call (or a plan step's literal input) carries identity
 * arguments the run was not given; null when every one is supported.
 */
export function unprovenCalls(
  calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>,
  ctx: TurnContext,
  state: ModelState,
  outputs: Outputs,
): string | null {
  const unsupported = unsupportedIdentities(calls, givenValues(ctx.run, state, outputs), (t) => ctx.loop.identityParameters?.(t) ?? []);
  return unsupported.length ? provenanceEvidence(unsupported) : null;
}

/**
 * The evidence the model is shown when every call it asks for was already made in this run with the
 * same arguments and has a verified result (its result is in the prompt: calling again changes
 * nothing); null when any call is new, or an earlier one failed (trying a failed call again is the
 * model's to decide). Small models (Qwen2.5-Coder-0.5B) ask for the same call again after its result.
 */
export function repeatedCalls(
  calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>,
  plan: Plan,
  outputs: Outputs,
  skill?: Pick<ReactSkill, 'groundedBy' | 'answerAfter'>,
  tried: readonly string[] = [],
): string | null {
  const answered = answeredCalls(plan, outputs);
  if (!calls.length || !calls.every((c) => answered.has(`${c.tool}\u0000${JSON.stringify(c.arguments)}`))) return null;
  return repeatEvidence(calls.map((c) => `${c.tool} ${JSON.stringify(c.arguments)}`).join(', '), plan, outputs, skill, tried);
}

/**
 * What the model is told when it asks again for `named`, calls it has the results of: to answer
 * with them, or, while no final answer could stand yet, to call the next tool. Told to "give the
 * final answer" then, the 1.5B guessed an order id instead of calling orders.latest with the
 * customer_id crm.find_customer had returned, and called orders.get again instead of refunds.create.
 */
export function repeatEvidence(
  named: string,
  plan: Plan,
  outputs: Outputs,
  skill?: Pick<ReactSkill, 'groundedBy' | 'answerAfter'>,
  tried: readonly string[] = [],
): string {
  const waiting = skill ? ungrounded(skill, plan, outputs, tried) : null;
  return waiting
    ? `${named} was already called in this run and its result is above: use the values it returned to call the next tool (${waiting.replace(/: call .*$/, '')})`
    : `${named} was already called in this run and its result is above: use it to give the final answer, or call a different tool`;
}

/** A plan step's input without its references to other steps' results. */
export function literalInputs(input: unknown): Record<string, unknown> {
  if (!input || typeof input !== 'object') return {};
  return Object.fromEntries(Object.entries(input).filter(([, v]) => !(typeof v === 'string' && v.includes('{{'))));
}

// Argument provenance.

/** One identity argument that nothing the run was given supports. */
export interface UnsupportedIdentity {
  tool: string;
  parameter: string;
  value: string;
}

/** What a run was given, that identity arguments may come from. */
export interface GivenValues {
  /** The ticket's text, and each customer reply (free text: values are found as whole tokens). */
  texts: readonly string[];
  /** Verified results of the run's tool calls (values are collected from every string and number in them). */
  results: readonly unknown[];
}

/**
 * The identity arguments of `calls` that appear in none of `given`, in call order (empty when every
 * one is supported).
 * @param identityParameters a tool's identity parameters (its catalog entry's `identity_parameters`; none for an unknown tool)
 */
export function unsupportedIdentities(
  calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>,
  given: GivenValues,
  identityParameters: (tool: string) => readonly string[],
): UnsupportedIdentity[] {
  const known = new Set<string>();
  for (const result of given.results) collectValues(result, known);
  const texts = given.texts.map((t) => t.toLowerCase());
  const out: UnsupportedIdentity[] = [];
  for (const call of calls) {
    for (const parameter of identityParameters(call.tool)) {
      const raw = call.arguments[parameter];
      if (raw === undefined || raw === null) continue;
      const value = String(raw).trim().toLowerCase();
      if (value && (known.has(value) || texts.some((t) => containsToken(t, value)))) continue;
      out.push({ tool: call.tool, parameter, value: String(raw) });
    }
  }
  return out;
}

/** What the model is told (and the run records) about refused identity arguments. */
export function provenanceEvidence(unsupported: readonly UnsupportedIdentity[]): string {
  const list = unsupported.map((u) => `${u.tool}'s ${u.parameter} ${JSON.stringify(u.value)}`).join(', ');
  return `${list}: not in the ticket, a customer's reply or a verified tool result. Do not guess or copy an example id: ask the customer for it.`;
}

function collectValues(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') into.add(value.trim().toLowerCase());
  else if (typeof value === 'number' && Number.isFinite(value)) into.add(String(value));
  else if (Array.isArray(value)) for (const v of value) collectValues(v, into);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collectValues(v, into);
}

/**
 * A tool with side effects whose last call in the run failed (no later call of it succeeded), as
 * `refunds.create failed (client_error) and was not made`; null when none did. Such a run's answer can
 * only explain a deed that did not happen: Observation never turns an error into a friendly story.
 * A denied approval or a policy's refusal is a decision, not a failure: the answer may explain it.
 */
export function failedWrite(ctx: TurnContext): string | null {
  const last = new Map<string, string>();
  for (const step of ctx.plan.steps) {
    if (isModelStep(step.id) || !ctx.loop.sideEffects?.(step.tool)) continue;
    const error = ctx.run.error_history[step.id]?.at(-1)?.split(':')[0];
    // A person's denial or a policy's refusal is a decision the answer may explain, not a failure.
    if (ctx.outputs[step.id] !== undefined || error === 'approval_denied' || error === 'policy_violation') last.delete(step.tool);
    else if (error) last.set(step.tool, error);
  }
  const [tool, error] = [...last.entries()][0] ?? [];
  return tool ? `${tool} failed (${error}) and was not made` : null;
}

/** The withheld tool a `hallucinated_tool` rejection names (the gate names wire names: `orders__get`), or null. */
export function withheldNamed(evidence: string, state: ModelState): string | null {
  const named = /names "([^"]+)", which this skill does not offer/.exec(evidence)?.[1];
  return named ? (state.withheld?.find((t) => t === named || toWireName(t) === named) ?? null) : null;
}

/**
 * What the react tests of Thought's core share: a model loop over the real catalog, and the records
 * the other stages would write back (a model's answer, a tool's result) for the wave Thought asked for.
 */
import type { ThoughtDecision } from '../../../processors/thought/core.ts';
import { DEFAULT_SYSTEM_RULES } from '../../../processors/thought/model/prompt.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { ModelLoopConfig, ReactSkill } from '../../../processors/thought/model/state.ts';
import type { ObservationResult, Outcome, RunSnapshot, ThoughtRequest, Verdict } from '../../../schemas/types.gen.ts';
import { validVerdict, type World } from '../fixtures.ts';

/** Token counts of every scripted answer. */
export const USAGE = { prompt_tokens: 400, completion_tokens: 40, total_tokens: 440 };

/** The model loop as wiring builds it, over the real catalog, serving one skill. */
export function reactLoop(world: World, skill: ReactSkill): ModelLoopConfig {
  return {
    tool: 'model.chat',
    skill: (name) => (name === skill.name ? skill : undefined),
    toolSpec: (name) => {
      const spec = world.catalog.get(name)?.spec;
      return spec && { name: spec.name, description: spec.description, parameters: spec.parameters };
    },
    identityParameters: (name) => world.catalog.get(name)?.spec.identity_parameters ?? [],
    responseSchema: (name) => world.catalog.get(name)?.spec.response,
    sideEffects: (name) => world.catalog.get(name)?.spec.side_effects === true,
    system: DEFAULT_SYSTEM_RULES,
  };
}

export const requestOf = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'thoughtRequests')?.value as ThoughtRequest | undefined;
export const outcomeOf = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;
export const snapshotOf = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'thoughtRuns')?.value as RunSnapshot;

/** Observation's answer to the wave `d` asked for, with the verdicts `vs` gives for its request. */
export function observed(d: ThoughtDecision, vs: (req: ThoughtRequest) => Verdict[]): ObservationResult {
  const req = requestOf(d)!;
  return {
    thought_id: req.thought_id,
    iteration: req.iteration,
    run: req.run,
    verdicts: vs(req),
    rules_version: null,
    classifier_model: null,
    dead_letter: null,
  };
}

/** The verified model answer `a` to a wave's model turn. */
export const answered = (a: ModelAnswer) => (req: ThoughtRequest) => [validVerdict(req.steps[0]!.step_id, 'model.chat', a)];

/** A verified result `data` of the wave's first step, a call of `tool`. */
export const resulted = (tool: string, data: unknown) => (req: ThoughtRequest) => [validVerdict(req.steps[0]!.step_id, tool, data)];

/** A model answer calling each `[tool, arguments]` in one turn. */
export const calling = (...cs: Array<[string, Record<string, unknown>]>): ModelAnswer => ({
  kind: 'tool_calls',
  content: null,
  calls: cs.map(([tool, args], i) => ({ id: `c${i}`, tool, arguments: args })),
  usage: USAGE,
});

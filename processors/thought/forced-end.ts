/**
 * Runs that end without a verdict to decide on: a wave a stage dead-lettered (Action, Observation).
 * Every run ends with an outcome; these are the ends that come from the records the runtime writes
 * when the loop itself cannot go on. Pure, like the rest of Thought's core: decided from the record
 * alone, so `replay --verify` re-decides them.
 */
import type { DeadLetterRef, ObservationResult, RunSnapshot } from '../../schemas/types.gen.ts';
import { end, type ThoughtDecision } from './run-end.ts';

/** Where a dead letter is, as people read it: `<topic>[<partition>]@<offset>`. */
export const deadLetterWhere = (ref: DeadLetterRef): string => `${ref.topic}[${ref.partition}]@${ref.offset}`;

/**
 * The end of a run whose wave was dead-lettered (`obs.dead_letter`): failed, `dead_letter`, the
 * reason naming the stage, the error code and message and where the record was (its dead letter is
 * on `<topic>.dlq`), the reference in the outcome. Null for an observation of a wave that ran.
 */
export function endDeadLettered(obs: ObservationResult): ThoughtDecision | null {
  const ref = obs.dead_letter;
  if (!ref) return null;
  const reason = `wave ${obs.iteration} was dead-lettered by ${ref.stage} (${ref.code}: ${ref.message}) at ${deadLetterWhere(ref)}; the record is on ${ref.topic}.dlq`;
  const ended = end({ thoughtId: obs.thought_id, iteration: obs.iteration, run: obs.run }, 'failed', 'dead_letter', reason, { deadLetter: ref });
  // The snapshot remembers the dead letter: a re-drive of it, once its cause is fixed, resumes the run.
  return { outputs: ended.outputs.map((o) => (o.topic === 'thoughtRuns' ? { ...o, value: { ...o.value, dead_letter: ref } } : o)) };
}

/**
 * Whether `obs` resumes a run its dead letter ended: the wave that was dead-lettered, re-driven
 * (`tao dlq redrive`) once the cause was fixed, ran this time. The run goes on from it as if the dead
 * letter had not been (its failed outcome stays in the log; a second outcome ends it again).
 */
export function resumesDeadLettered(obs: ObservationResult, snapshot: RunSnapshot | undefined): boolean {
  return snapshot?.status === 'ended' && snapshot.dead_letter !== null && snapshot.iteration === obs.iteration && obs.dead_letter === null;
}

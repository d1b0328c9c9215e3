/**
 * Drift check: re-decides a recorded run with today's Thought and Observation code and
 * configuration and compares every decision with what was recorded.
 *
 * Inputs are the run's own records, in causal order: each task and observation result goes through
 * Thought's `onTask` / `onObservation` (with the run snapshot rebuilt from the run's thought.runs
 * records, and the planner's recorded answer from the run state, so no planner is asked), each
 * action result through Observation's `observe` (tool answers come from the record). Both cores are
 * pure, so verify sends no request to any tool or model.
 *
 * Matching a decision to what was recorded: Thought's decision for an input at wave `w` is either
 * the request for wave `w + 1` or an outcome after `w` waves, written after the input; the earliest
 * such unmatched record is the recorded decision. An input today's code ignores may leave that
 * record to a later input of the same wave (a redelivered task next to the observation that really
 * decided); if no later input can own it, the input is where the run diverges.
 */
import type { ObservationConfig } from '../processors/observation/core.ts';
import { observe } from '../processors/observation/core.ts';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../processors/thought/core.ts';
import { endTooLarge, type ThoughtInput, tooLargeOf } from '../processors/thought/run-end.ts';
import { encodedValueBytes } from '../runtime/codec.ts';
import type { ActionResult, ObservationResult, Outcome, RunSnapshot, Task, ThoughtRequest } from '../schemas/types.gen.ts';
import type { TopicId } from '../topics/catalog.ts';
import type { RecordRef } from './dead-letters.ts';
import { diffValues, type FieldDiff } from './diff.ts';
import type { LoggedRecord, RunLog } from './log.ts';
import { FORK_HEADERS, REDRIVEN_FROM_HEADER, refKey } from './record-format.ts';

/** Today's configurations to re-decide with (processors/wiring/index.ts thoughtConfig and observationConfig). */
export interface VerifyConfigs {
  /** Thought as the run recorded it where today's configuration allows (replay/verify-config.ts). */
  thought: ThoughtConfig;
  observation: ObservationConfig;
  /** Where today's configuration differs from what the run was made with (none: the same configuration). */
  configurationDrift?: ConfigDrift[];
  /** Notes on how the configuration was chosen, added to the report's notes. */
  notes?: string[];
}

/** A versioned setting the run was made with that today's configuration does not have. */
export interface ConfigDrift {
  setting: 'planner' | 'planner_config' | 'flow' | 'observation_rules' | 'classifier_model';
  /** What the run recorded, e.g. `order-status@1`, `routes@1`, (Observation's rules) `1#0123456789ab` or `error-classifier@40fb93b7e03d`. */
  recorded: string;
  /** Today's, or null when today's configuration has none. */
  today: string | null;
  explanation: string;
}

/** The first record where today's code decides differently, with both versions. */
export interface Divergence {
  code: 'DETERMINISM_VIOLATION';
  stage: 'thought' | 'observation';
  /** The recorded input that was re-decided. */
  input: { topic: TopicId; ref: RecordRef; summary: string };
  recorded: { topic: TopicId; ref: RecordRef; value: unknown } | null;
  today: { topic: TopicId; value: unknown } | null;
  diff: FieldDiff[];
  explanation: string;
}

/**
 * The `tao.verify.v1` document: drift or not, what was compared, the first divergence. Configuration
 * drift (the run was made with a configuration today's does not have) is reported apart from code
 * drift (the same configuration decides differently today).
 */
export interface VerifyReport {
  format: 'tao.verify.v1';
  thought_id: string;
  /** Any drift: configuration or code. */
  drift: boolean;
  /** A decision differs although the configuration is the one the run recorded. */
  code_drift: boolean;
  configuration_drift: ConfigDrift[];
  checked: { thought_inputs: number; observation_inputs: number; records_compared: number };
  first_divergence: Divergence | null;
  /** Things verify could not compare and why (a compacted snapshot, a wave still in flight, a dead-lettered input). */
  notes: string[];
}

type Rec<T> = LoggedRecord & { value: T & Record<string, unknown> };

/** Records of one transaction are stamped when the batch is built; a few seconds covers a slow batch. */
const SAME_TRANSACTION_MS = 5000;

/** Re-decides every recorded input of `log` and reports the first divergence, or none. */
export async function verifyRun(log: RunLog, configs: VerifyConfigs): Promise<VerifyReport> {
  const notes: string[] = [...(configs.notes ?? [])];
  const configurationDrift = configs.configurationDrift ?? [];
  const deadLettered = new Set(log.deadLetters.flatMap((d) => (d.source ? [refKey(d.source)] : [])));
  const live = log.records.filter((r) => {
    if (r.value === null)
      notes.push(
        `${r.ref.topic}[${r.ref.partition}]@${r.ref.offset} does not decode (${r.decodeError?.code}), so it was dead-lettered by its stage: not re-decided`,
      );
    return r.value !== null;
  });
  // Records a stage did not write: re-driven copies of dead letters and the first wave of a fork.
  const written = (r: LoggedRecord) => r.headers[REDRIVEN_FROM_HEADER] === undefined && r.headers[FORK_HEADERS.parent] === undefined;
  const recordedRequests = live.filter((r) => r.topic === 'thoughtRequests' && written(r)) as Array<Rec<ThoughtRequest>>;
  const recordedOutcomes = live.filter((r) => r.topic === 'outcomes' && written(r)) as Array<Rec<Outcome>>;
  const recordedSnapshots = live.filter((r) => r.topic === 'thoughtRuns') as Array<Rec<RunSnapshot>>;
  const recordedObservations = live.filter((r) => r.topic === 'observationResults' && written(r)) as Array<Rec<ObservationResult>>;
  const consumed = new Set<LoggedRecord>();
  // Observation's own dead letters: the runner wrote the wave's observation beside the dead letter
  // of its action result (no verdict to re-judge); Thought's decision on it is re-decided below.
  for (const o of recordedObservations)
    if (o.value.dead_letter?.stage === 'observation') {
      consumed.add(o);
      notes.push(`${where(o)} was written for a dead letter of Observation (${o.value.dead_letter.code}): not re-judged`);
    }
  // A dead-lettered record was written (it may be a decision to compare) but never read by its stage.
  const inputs = live.filter((r) => {
    if (r.topic !== 'tasks' && r.topic !== 'observationResults' && r.topic !== 'actionResults') return false;
    if (!deadLettered.has(refKey(r.ref))) return true;
    notes.push(`${where(r)} was dead-lettered by its stage: not re-decided`);
    return false;
  });
  const lastAt = Math.max(...log.records.map((r) => r.timestamp));
  let snapshot: RunSnapshot | undefined;
  let compared = 0;
  const checked = { thought: 0, observation: 0 };

  const report = (divergence: Divergence | null): VerifyReport => ({
    format: 'tao.verify.v1',
    thought_id: log.thoughtId,
    drift: divergence !== null || configurationDrift.length > 0,
    code_drift: divergence !== null && configurationDrift.length === 0,
    configuration_drift: configurationDrift,
    checked: { thought_inputs: checked.thought, observation_inputs: checked.observation, records_compared: compared },
    first_divergence: divergence,
    notes,
  });
  /**
   * The report of today's `stage` deciding `input` differently: given the decision the log holds
   * (undefined: none), what today's code writes instead (null: nothing), the fields that differ and why.
   */
  const diverged =
    (stage: Divergence['stage'], input: LoggedRecord) =>
    (recorded: LoggedRecord | undefined, today: { topic: TopicId; value: unknown } | null, diff: FieldDiff[], explanation: string): VerifyReport =>
      report({
        code: 'DETERMINISM_VIOLATION',
        stage,
        input: inputOf(input),
        recorded: recorded === undefined ? null : { topic: recorded.topic, ref: recorded.ref, value: recorded.value },
        today: today === null ? null : { topic: today.topic, value: today.value },
        diff,
        explanation,
      });

  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]!;
    const later = inputs.slice(i + 1);
    if (input.topic === 'actionResults') {
      checked.observation++;
      const result = input.value as unknown as ActionResult;
      const today = await observe(result, configs.observation);
      const differs = diverged('observation', input);
      const written = { topic: 'observationResults' as const, value: today };
      const recorded = recordedObservations.find((o) => !consumed.has(o) && o.value.iteration === result.iteration && o.timestamp >= input.timestamp);
      if (!recorded) {
        if (input.timestamp >= lastAt) {
          notes.push(`${where(input)}: no observation result yet (the wave is still in flight)`);
          continue;
        }
        return differs(undefined, written, [], `Observation's result for wave ${result.iteration} is not in the log, but today's code writes one`);
      }
      consumed.add(recorded);
      compared++;
      // Which rules and classifier judged is configuration, reported as configuration drift
      // (replay/verify-config.ts), and records written before the fields have none: the verdicts
      // themselves are compared.
      const diff = diffValues({ ...recorded.value, rules_version: null, classifier_model: null }, { ...today, rules_version: null, classifier_model: null });
      if (diff.length) return differs(recorded, written, diff, `today's Observation judges wave ${result.iteration} differently`);
      continue;
    }

    checked.thought++;
    const differs = diverged('thought', input);
    const isTask = input.topic === 'tasks';
    const wave = isTask ? (snapshot?.iteration ?? 0) : (input.value as unknown as ObservationResult).iteration;
    const options = recordedDecisions(input, wave);
    let decision: ThoughtDecision;
    if (isTask) {
      const first = options[0];
      const firstSnapshot = first ? snapshotWith(first, input) : undefined;
      const plannerRecord =
        first?.topic === 'thoughtRequests' ? (first.value as ThoughtRequest).run.planner_record : (firstSnapshot?.value.run?.planner_record ?? null);
      if (!first) notes.push(`${where(input)}: no recorded decision to take the planner's answer from; re-planned without one`);
      decision = onTask(input.value as unknown as Task, configs.thought, snapshot, plannerRecord);
    } else {
      decision = onObservation(input.value as unknown as ObservationResult, configs.thought, snapshot);
    }
    // A run the runner ended because Thought's decision was too large for a record (Thought's
    // fitOutputs): today's decision ends it the same way when the record it writes on that topic is
    // too large today too (measured with this code's schema); otherwise the decision stands and is
    // compared as it is.
    const endedTooLarge = options.find((o): o is Rec<Outcome> => o.topic === 'outcomes' && (o.value as Outcome).reason_code === 'record_too_large');
    const over = endedTooLarge ? tooLargeOf(endedTooLarge.value) : null;
    const bytes = over ? Math.max(0, ...decision.outputs.filter((o) => o.topic === over.topic).map((o) => encodedValueBytes(o.topic, o.value))) : 0;
    const ended =
      over && bytes > over.limit
        ? endTooLarge({ topic: input.topic, value: input.value } as unknown as ThoughtInput, decision.outputs, { ...over, bytes })
        : null;
    if (over && ended) {
      decision = ended;
      notes.push(
        `${where(input)}: the run ended record_too_large (its next ${over.topic} record was ${over.bytes} bytes); today's decision writes one of ${bytes} bytes, over the ${over.limit}-byte limit too`,
      );
    }
    const main = decision.outputs.find((o) => o.topic === 'thoughtRequests' || o.topic === 'outcomes');
    // The recorded decisions this input may skip over are those a later input of the same wave can own.
    let chosen: Rec<ThoughtRequest> | Rec<Outcome> | undefined;
    let blocking: Rec<ThoughtRequest> | Rec<Outcome> | undefined;
    for (const o of options) {
      if (main && o.topic === main.topic) {
        chosen = o;
        break;
      }
      if (!later.some((l) => couldOwn(l, o, wave))) {
        blocking = o;
        break;
      }
    }
    if (!main) {
      if (blocking)
        return differs(blocking, null, [], `today's Thought ignores this input (${decision.ignored ?? 'no output'}), but the run recorded a decision for it`);
      continue;
    }
    if (!chosen) {
      if (!blocking && input.timestamp >= lastAt) {
        notes.push(`${where(input)}: Thought has not decided yet (the run is in flight)`);
        continue;
      }
      const what = (topic: TopicId) => (topic === 'outcomes' ? 'an outcome' : 'a next wave');
      const against = blocking ? `where the run recorded ${what(blocking.topic)}` : 'for this input; the run recorded none';
      return differs(blocking, main, [], `today's Thought writes ${what(main.topic)} ${against}`);
    }
    consumed.add(chosen);
    compared++;
    const diff = diffValues(chosen.value, main.value);
    if (diff.length) return differs(chosen, main, diff, `today's Thought decides differently on ${summary(input)} (the run at wave ${wave})`);
    const todaySnapshot = decision.outputs.find((o) => o.topic === 'thoughtRuns')?.value as RunSnapshot | undefined;
    if (todaySnapshot) {
      const paired = snapshotWith(chosen, input);
      if (paired) {
        consumed.add(paired);
        compared++;
        const sdiff = diffValues(paired.value, todaySnapshot);
        if (sdiff.length)
          return differs(paired, { topic: 'thoughtRuns', value: todaySnapshot }, sdiff, `today's Thought remembers the run differently after wave ${wave}`);
        snapshot = paired.value;
      } else {
        notes.push(`${where(input)}: the run snapshot written with this decision is not in thought.runs any more (compacted); today's is used`);
        snapshot = todaySnapshot;
      }
    }
  }

  const leftover = [...recordedRequests, ...recordedOutcomes, ...recordedObservations]
    .filter((r) => !consumed.has(r))
    .sort((a, b) => a.timestamp - b.timestamp)[0];
  if (leftover) {
    const stage = leftover.topic === 'observationResults' ? 'observation' : 'thought';
    return diverged(stage, leftover)(leftover, null, [], "the run recorded this decision, but no recorded input makes today's code write it");
  }
  return report(null);

  /** Recorded decisions that may be the one for `input` at wave `wave`, earliest first. */
  function recordedDecisions(input: LoggedRecord, wave: number): Array<Rec<ThoughtRequest> | Rec<Outcome>> {
    const options = [
      ...recordedRequests.filter((r) => !consumed.has(r) && r.value.iteration === wave + 1),
      ...recordedOutcomes.filter((r) => !consumed.has(r) && r.value.iterations === wave),
    ].filter((r) => r.timestamp >= input.timestamp);
    return options.sort((a, b) => a.timestamp - b.timestamp);
  }

  /**
   * The snapshot written in the same transaction as `decision`: after the input, close in time, and
   * saying what the decision did (running at the new wave with a request; parked or ended after
   * the outcome's waves).
   */
  function snapshotWith(decision: Rec<ThoughtRequest> | Rec<Outcome>, input: LoggedRecord): Rec<RunSnapshot> | undefined {
    const isRequest = decision.topic === 'thoughtRequests';
    const wave = isRequest ? (decision.value as ThoughtRequest).iteration : (decision.value as Outcome).iterations;
    return recordedSnapshots.find(
      (s) =>
        !consumed.has(s) &&
        s.timestamp >= input.timestamp &&
        Math.abs(s.timestamp - decision.timestamp) <= SAME_TRANSACTION_MS &&
        s.value.iteration === wave &&
        (s.value.status === 'running') === isRequest,
    );
  }
}

/** Whether a later input `l` could be the one whose recorded decision is `decision` (same wave slot). */
function couldOwn(l: LoggedRecord, decision: LoggedRecord, wave: number): boolean {
  if (l.timestamp > decision.timestamp) return false;
  if (l.topic === 'tasks') return true;
  return l.topic === 'observationResults' && (l.value as unknown as ObservationResult).iteration === wave;
}

function inputOf(r: LoggedRecord): Divergence['input'] {
  return { topic: r.topic, ref: r.ref, summary: summary(r) };
}

function where(r: LoggedRecord): string {
  return `${summary(r)} (${r.ref.topic}[${r.ref.partition}]@${r.ref.offset})`;
}

function summary(r: LoggedRecord): string {
  const v = r.value as Record<string, unknown> | null;
  switch (r.topic) {
    case 'tasks':
      return `task ${String(v?.task_id)} (${String(v?.kind)})`;
    case 'outcomes':
      return `outcome ${String(v?.status)}`;
    case 'thoughtRuns':
      return `snapshot ${String(v?.status)}`;
    default:
      return `${r.topic} wave ${String(v?.iteration)}`;
  }
}

import type { HandledRecord, InputRecord, OutputRecord, StageDefinition, StateView } from '../../runtime/processor.ts';
import type { Logger } from '../../runtime/log.ts';
import type { RunMetrics } from '../../runtime/metrics.ts';
import { traceStage } from '../../runtime/tracing/spans.ts';
import type { ObservationResult, Outcome, RunSnapshot, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { classifyRunEnd, endsRun, waveFailures } from '../rates.ts';
import { modelDriven } from '../run-driver.ts';
import { onObservation, onTask, planningText, type ThoughtConfig } from './core.ts';
import { endTooLarge, type ThoughtInput, type ThoughtOutput } from './run-end.ts';
import { answerCost, type ModelLoopConfig } from './model/state.ts';
import { TaoError } from '../../runtime/errors.ts';
import { lateInput } from '../../runtime/retention.ts';

/** How long an ended run stays in the store, in record time, unless TAO_RUN_RETENTION says otherwise. */
export const DEFAULT_RUN_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Tombstones of expired runs per transaction, at most: a sweep adds little to any one chunk. */
const SWEEP_PER_TRANSACTION = 200;

/** The shell's options (the core's are in {@link ThoughtConfig}). */
export interface ThoughtStageOptions {
  /**
   * Record time an ended run stays in `thought.runs` (TAO_RUN_RETENTION). An input of a run the
   * store does not know whose record time is this far behind the partition's is ignored: its run
   * may have been swept (docs/ARCHITECTURE.md, "A bounded run store").
   */
  runRetentionMs?: number;
}

/**
 * Thought's configurations by release (processors/wiring/releases.ts): a new run starts on the
 * release the pointer picks for it, and every later decision of the run uses the release it recorded.
 */
export interface ThoughtReleases {
  /** The configuration of release `digest` (null: a run recorded before runs named one). */
  forRelease(digest: string | null): Promise<ThoughtConfig>;
  /** The release a new run starts on. */
  pickForNewRun(thoughtId: string): string;
}

/** One configuration for every run (tests, and a stage without releases). */
const fixedRelease = (config: ThoughtConfig): ThoughtReleases => ({ forRelease: () => Promise.resolve(config), pickForNewRun: () => config.manifest ?? '' });

/** The release a run's task or observation is decided by: the run's own, or for a new run the one picked for it. */
async function configFor(record: InputRecord, snapshot: RunSnapshot | undefined, releases: ThoughtReleases): Promise<ThoughtConfig> {
  if (record.topic === 'observationResults') return releases.forRelease((record.value as ObservationResult).run.manifest);
  if (snapshot) return releases.forRelease(snapshot.manifest ?? snapshot.run?.manifest ?? null);
  const task = record.value as Task;
  return releases.forRelease(task.kind === 'NEW' ? releases.pickForNewRun(task.thought_id) || null : null);
}

/** What the run had been through when a decision was made, for the run-level rates. */
interface DecisionFacts {
  /** `RunState.failures_seen` as the decision left it. */
  failures: number;
  humanInvolved: boolean;
  durationMs: number;
  /** The model loop of the release the decision was made on. */
  model?: ModelLoopConfig;
}

/**
 * Thought: reads `tao.tasks` and `observation.results`, writes the next wave or the run's outcome.
 * With `runMetrics`, each committed outcome is counted (`tao_runs_ended_total`, the rates); each
 * committed decision is logged (wave dispatched, run ended or parked).
 */
export function thoughtStage(
  configs: ThoughtConfig | ThoughtReleases,
  logger: Logger,
  runMetrics?: RunMetrics,
  options: ThoughtStageOptions = {},
): StageDefinition {
  const releases = 'forRelease' in configs ? configs : fixedRelease(configs);
  const retentionMs = options.runRetentionMs ?? DEFAULT_RUN_RETENTION_MS;
  // Filled by handle, read once the record's transaction commits; keyed by the input object, so a
  // chunk that aborts leaves nothing behind.
  const facts = new WeakMap<InputRecord, DecisionFacts>();
  return traceStage<StageDefinition>(
    {
      stage: 'thought',
      inputs: ['tasks', 'observationResults'],
      outputs: ['thoughtRequests', 'outcomes', 'thoughtRuns'],
      storeTopic: 'thoughtRuns',
      // Only ended runs leave the store: a running run's next observation and a parked run's reply need theirs.
      storeRetention: { retentionMs, expirable: (stored) => (stored as RunSnapshot).status === 'ended', sweepPerTransaction: SWEEP_PER_TRANSACTION },
      concurrency: 16,
      maxRecordsPerTransaction: 200,
      maxInputBytes: 4 * 1024 * 1024,
      inFlight: (stored) => (stored as RunSnapshot).status === 'running',
      // A decision whose records are too large for the topics (the run's state has grown past what a
      // record holds, with the data of every step it carries) ends the run as failed, with an outcome
      // that says so, rather than dead-lettering the observation and leaving the run without one.
      fitOutputs(input, outputs, over) {
        const ended = endTooLarge(input as InputRecord & ThoughtInput, outputs as unknown as ThoughtOutput[], over);
        return ended && asOutputs(input, ended.outputs);
      },
      async handle(record: InputRecord, state: StateView): Promise<OutputRecord[]> {
        const started = performance.now();
        const snapshot = state.get<RunSnapshot>(record.key);
        let decision;
        let fact: Omit<DecisionFacts, 'durationMs'>;
        // The shell resolves the run's release and hands its configuration to the core.
        const config = await configFor(record, snapshot, releases);
        // An input of a run the store does not know, a retention behind the partition's record time,
        // may belong to a run already swept: acting on it could start that run a second time.
        const late =
          snapshot === undefined && record.timestampMs !== undefined ? lateInput(record.timestampMs, state.streamTimeMs?.() ?? null, retentionMs) : null;
        if (late !== null) {
          decision = {
            outputs: [],
            ignored: `${record.topic === 'tasks' ? `task ${(record.value as Task).task_id}` : 'observation'} of unknown run ${record.key}: ${late}`,
          };
          fact = { failures: 0, humanInvolved: false };
        } else if (record.topic === 'tasks') {
          const task = record.value as Task;
          const text = planningText(task, snapshot);
          // The planner's I/O happens here, in the shell; its answer travels in the run's records.
          const plannerRecord =
            text !== null && config.planner.gather ? await config.planner.gather({ thought_id: task.thought_id, text, metadata: task.metadata }) : null;
          decision = onTask(task, config, snapshot, plannerRecord);
          // A task that is not ignored either starts a run or is a person's reply to a parked one (a
          // scheduler's timer is neither).
          fact = {
            failures: snapshot?.run?.failures_seen ?? 0,
            humanInvolved: task.kind === 'TIMER' ? (snapshot?.run?.human_involved ?? false) : snapshot !== undefined,
          };
        } else {
          const obs = record.value as ObservationResult;
          decision = onObservation(obs, config, snapshot);
          fact = { failures: obs.run.failures_seen + waveFailures(obs.verdicts), humanInvolved: obs.run.human_involved };
        }
        // A refused decision goes to the dead-letter topic with why: recorded, and never applied.
        if (decision.refused) throw new TaoError('DECISION_REFUSED', decision.refused);
        if (decision.ignored) logger.info('input ignored', { thought_id: record.key, topic: record.topic, offset: record.offset, reason: decision.ignored });
        facts.set(record, { ...fact, durationMs: Math.round((performance.now() - started) * 1000) / 1000, model: config.model });
        return asOutputs(record, decision.outputs);
      },
      committed(records: readonly HandledRecord[]): void {
        for (const { input, outputs } of records) {
          const fact = facts.get(input);
          if (runMetrics && input.topic === 'observationResults')
            countModelTurns(
              runMetrics,
              input.value as ObservationResult,
              outputs.some((o) => o.topic === 'outcomes'),
              fact?.model,
            );
          for (const out of outputs) {
            if (out.topic === 'thoughtRequests') {
              const request = out.value as ThoughtRequest;
              logger.info('wave dispatched', {
                thought_id: request.thought_id,
                iteration: request.iteration,
                step: request.steps.map((s) => s.step_id).join(','),
                tool: request.steps.map((s) => s.tool).join(','),
                status: 'running',
                duration_ms: fact?.durationMs ?? null,
                error_code: null,
              });
            } else if (out.topic === 'outcomes') {
              const outcome = out.value as Outcome;
              const end = endsRun(outcome.status) ? classifyRunEnd(outcome.status, fact?.failures ?? 0, fact?.humanInvolved ?? false) : null;
              runMetrics?.outcome(outcome.status, outcome.reason_code, end);
              logger.info(end ? 'run ended' : outcome.status === 'awaiting_approval' ? 'run awaiting approval' : 'run awaiting input', {
                thought_id: outcome.thought_id,
                iteration: outcome.iterations,
                step: null,
                tool: null,
                status: outcome.status,
                duration_ms: fact?.durationMs ?? null,
                error_code: outcome.status === 'completed' ? null : outcome.reason_code,
                reason_code: outcome.reason_code,
                steps_executed: outcome.steps_executed,
                failures_seen: fact?.failures ?? null,
                human_involved: fact?.humanInvolved ?? null,
              });
            }
          }
        }
      },
    },
    describeDecision,
  );
}

/** A decision's records as the runner writes them, keyed by thought id; every record of one decision names the same writer, the span of its input's handling (runtime/tracing/spans.ts). */
function asOutputs(record: InputRecord, outputs: ThoughtOutput[]): OutputRecord[] {
  const writer =
    record.topic === 'tasks' ? `thought:task:${(record.value as Task).task_id}` : `thought:observation:${(record.value as ObservationResult).iteration}`;
  return outputs.map((o) => ({ topic: o.topic, key: o.value.thought_id, value: o.value, span: writer }));
}

/** Span attributes of a Thought decision: what it read and what it decided. */
function describeDecision(record: InputRecord, outputs: readonly OutputRecord[]): Record<string, string | number> {
  const read: Record<string, string | number> =
    record.topic === 'tasks'
      ? { 'tao.task_id': (record.value as Task).task_id, 'tao.task_kind': (record.value as Task).kind }
      : { 'tao.iteration': (record.value as ObservationResult).iteration };
  const wave = outputs.find((o) => o.topic === 'thoughtRequests')?.value as ThoughtRequest | undefined;
  const outcome = outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;
  if (wave) return { ...read, 'tao.decision': 'wave', 'tao.wave': wave.iteration, 'tao.steps': wave.steps.length };
  if (outcome) return { ...read, 'tao.decision': 'outcome', 'tao.status': outcome.status, 'tao.reason_code': outcome.reason_code };
  return { ...read, 'tao.decision': 'ignored' };
}

/** The model's part of a committed observation: its verified answer (tokens, latency, cost), and the run's turns when it ended. */
function countModelTurns(metrics: RunMetrics, obs: ObservationResult, ended: boolean, loop: ModelLoopConfig | undefined): void {
  const modelTool = loop?.tool;
  if (!loop || !modelTool || !modelDriven(obs.run) || obs.run.model_state_json === null) return;
  const state = JSON.parse(obs.run.model_state_json) as { skill: string; turns: number };
  const skill = loop.skill(state.skill.split('@')[0]!) ?? {};
  for (const v of obs.verdicts) {
    if (v.tool !== modelTool && !v.tool.startsWith(`${modelTool}_`)) continue;
    // Priced as Thought's core priced it (the same function, the same recorded usage).
    const paid = answerCost(v, skill, loop);
    if (paid) metrics.modelCost.inc({ model: paid.model, skill: state.skill }, paid.cost);
    const answer =
      v.valid && v.extracted_data_json
        ? (JSON.parse(v.extracted_data_json) as { kind: string; model: string | null; usage?: { prompt_tokens?: number; completion_tokens?: number } })
        : null;
    const model = answer?.model ?? 'unknown';
    metrics.modelLatency.observe({ model, skill: state.skill }, v.response_time_ms / 1000);
    if (!answer) continue;
    metrics.modelTurns.inc({ model, skill: state.skill, kind: answer.kind });
    metrics.modelTokens.inc({ model, skill: state.skill, type: 'prompt' }, answer.usage?.prompt_tokens ?? 0);
    metrics.modelTokens.inc({ model, skill: state.skill, type: 'completion' }, answer.usage?.completion_tokens ?? 0);
  }
  if (ended) metrics.modelTurnsPerRun.observe({ skill: state.skill }, state.turns);
}

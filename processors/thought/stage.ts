import { ContractViolation } from '../../runtime/errors.ts';
import type { InputRecord, OutputRecord, StageDefinition, StateView } from '../../runtime/processor.ts';
import type { Logger } from '../../runtime/log.ts';
import type { ObservationResult, RunSnapshot, Task } from '../../schemas/types.gen.ts';
import { onObservation, onTask, planningText, type ThoughtConfig } from './core.ts';

/** Thought: reads `tao.tasks` and `observation.results`, writes the next wave or the run's outcome. */
export function thoughtStage(config: ThoughtConfig, logger: Logger): StageDefinition {
  return {
    stage: 'thought',
    inputs: ['tasks', 'observationResults'],
    outputs: ['thoughtRequests', 'outcomes', 'thoughtRuns'],
    storeTopic: 'thoughtRuns',
    concurrency: 16,
    maxRecordsPerTransaction: 200,
    maxInputBytes: 4 * 1024 * 1024,
    async handle(record: InputRecord, state: StateView): Promise<OutputRecord[]> {
      const snapshot = state.get<RunSnapshot>(record.key);
      let decision;
      if (record.topic === 'tasks') {
        const task = record.value as Task;
        const text = planningText(task, snapshot);
        // The planner's I/O happens here, in the shell; its answer travels in the run's records.
        const plannerRecord = text !== null && config.planner.gather ? await config.planner.gather({ thought_id: task.thought_id, text, metadata: task.metadata }) : null;
        decision = onTask(task, config, snapshot, plannerRecord);
      } else {
        const obs = record.value as ObservationResult;
        try {
          JSON.parse(obs.run.plan_json);
          JSON.parse(obs.run.outputs_json);
        } catch (err) {
          throw new ContractViolation(`run state of ${obs.thought_id} is not valid JSON: ${(err as Error).message}`);
        }
        decision = onObservation(obs, config, snapshot);
      }
      if (decision.ignored) logger.info('input ignored', { thought_id: record.key, topic: record.topic, offset: record.offset, reason: decision.ignored });
      return decision.outputs.map((o) => ({ topic: o.topic, key: o.value.thought_id, value: o.value, span: o.topic === 'thoughtRequests' ? `thought:${o.value.iteration}` : `thought:${o.topic}` }));
    },
  };
}

import { ContractViolation } from '../../runtime/errors.ts';
import type { InputRecord, OutputRecord, StageDefinition } from '../../runtime/processor.ts';
import type { ObservationResult, Task } from '../../schemas/types.gen.ts';
import { onObservation, onTask, type ThoughtConfig } from './core.ts';

/** Thought: reads `tao.tasks` and `observation.results`, writes the next wave or the run's outcome. */
export function thoughtStage(config: ThoughtConfig): StageDefinition {
  return {
    stage: 'thought',
    inputs: ['tasks', 'observationResults'],
    outputs: ['thoughtRequests', 'outcomes'],
    concurrency: 16,
    maxRecordsPerTransaction: 200,
    maxInputBytes: 4 * 1024 * 1024,
    async handle(record: InputRecord): Promise<OutputRecord[]> {
      let outputs;
      if (record.topic === 'tasks') {
        outputs = onTask(record.value as Task, config);
      } else {
        const obs = record.value as ObservationResult;
        try {
          JSON.parse(obs.run.plan_json);
          JSON.parse(obs.run.outputs_json);
        } catch (err) {
          throw new ContractViolation(`run state of ${obs.thought_id} is not valid JSON: ${(err as Error).message}`);
        }
        outputs = onObservation(obs, config);
      }
      return outputs.map((o) => ({ topic: o.topic, key: o.value.thought_id, value: o.value, span: o.topic === 'outcomes' ? 'thought:outcome' : `thought:${(o.value as { iteration: number }).iteration}` }));
    },
  };
}

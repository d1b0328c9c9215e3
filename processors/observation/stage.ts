import type { InputRecord, OutputRecord, StageDefinition } from '../../runtime/processor.ts';
import type { ActionResult } from '../../schemas/types.gen.ts';
import { observe, type ObservationConfig } from './core.ts';

/** Observation: reads `action.results`, writes one `observation.results` record of verdicts per wave. */
export function observationStage(config: ObservationConfig): StageDefinition {
  return {
    stage: 'observation',
    inputs: ['actionResults'],
    outputs: ['observationResults'],
    concurrency: 16,
    maxRecordsPerTransaction: 200,
    maxInputBytes: 4 * 1024 * 1024,
    async handle(record: InputRecord): Promise<OutputRecord[]> {
      const result = record.value as ActionResult;
      return [{ topic: 'observationResults', key: result.thought_id, value: await observe(result, config), span: `observation:${result.iteration}` }];
    },
  };
}

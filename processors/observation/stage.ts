import type { Logger } from '../../runtime/log.ts';
import type { StepMetrics } from '../../runtime/metrics.ts';
import type { HandledRecord, InputRecord, OutputRecord, StageDefinition } from '../../runtime/processor.ts';
import type { ActionResult, ObservationResult } from '../../schemas/types.gen.ts';
import { evidenceComplete } from '../rates.ts';
import { traceStage } from '../../runtime/tracing/spans.ts';
import { deadLetteredWave, observe, type ObservationConfig } from './core.ts';

/** What Observation reports besides its records: a log line per verdict, step evidence counts. */
export interface ObservationReporting {
  logger?: Logger;
  stepMetrics?: StepMetrics;
}

/** Observation's configurations by release: a wave is judged by the rules, catalog and policies of the release its run started on. */
export interface ObservationReleases {
  forRelease(digest: string | null): Promise<ObservationConfig>;
  /** The deployment's configuration: what a dead-lettered wave's record names (its rules version). */
  deployment: ObservationConfig;
}

/**
 * Observation: reads `action.results`, writes one `observation.results` record of verdicts per wave.
 * Once a wave's verdicts are committed, each step is counted by the completeness of its evidence
 * (`tao_steps_observed_total`, the traceability index) and logged with its verdict.
 */
export function observationStage(configs: ObservationConfig | ObservationReleases, reporting: ObservationReporting = {}): StageDefinition {
  const releases: ObservationReleases = 'forRelease' in configs ? configs : { forRelease: () => Promise.resolve(configs), deployment: configs };
  const config = releases.deployment;
  return traceStage<StageDefinition>(
    {
      stage: 'observation',
      inputs: ['actionResults'],
      outputs: ['observationResults'],
      concurrency: 16,
      maxRecordsPerTransaction: 200,
      maxInputBytes: 4 * 1024 * 1024,
      // A wave's result Observation can never judge (a bug it triggers, a record too large) is
      // dead-lettered, and its run told so in the same transaction: Thought ends it failed.
      deadLettered({ input, ref }): OutputRecord[] {
        const result = input.value as ActionResult;
        return [{ topic: 'observationResults', key: result.thought_id, value: deadLetteredWave(result, ref, config), span: `observation:${result.iteration}` }];
      },
      async handle(record: InputRecord): Promise<OutputRecord[]> {
        const result = record.value as ActionResult;
        // The shell resolves the run's release and hands its configuration to the core.
        const judged = await observe(result, await releases.forRelease(result.run.manifest));
        return [{ topic: 'observationResults', key: result.thought_id, value: judged, span: `observation:${result.iteration}` }];
      },
      committed(records: readonly HandledRecord[]): void {
        for (const { input, outputs } of records) {
          const result = input.value as ActionResult;
          const verdicts = (outputs.find((o) => o.topic === 'observationResults')?.value as ObservationResult | undefined)?.verdicts ?? [];
          for (const step of result.results) {
            const complete = evidenceComplete(step);
            reporting.stepMetrics?.step(complete);
            const verdict = verdicts.find((v) => v.step_id === step.step_id);
            reporting.logger?.info('step observed', {
              thought_id: result.thought_id,
              iteration: result.iteration,
              step: step.step_id,
              tool: step.tool,
              status: verdict ? (verdict.valid ? 'valid' : 'invalid') : 'no_verdict',
              duration_ms: step.response_time_ms,
              error_code: verdict && !verdict.valid ? verdict.error_type : null,
              confidence: verdict?.confidence_score ?? null,
              evidence_complete: complete,
            });
          }
        }
      },
    },
    describeVerdicts,
  );
}

/** Span attributes of an Observation handling: the wave and which steps were judged invalid, with their error type. */
function describeVerdicts(record: InputRecord, [written]: readonly OutputRecord[]): Record<string, string | number | string[]> {
  const { iteration, results } = record.value as ActionResult;
  const invalid = ((written?.value as ObservationResult | undefined)?.verdicts ?? []).flatMap((v) => (v.valid ? [] : [`${v.step_id}:${v.error_type}`]));
  return { 'tao.iteration': iteration, 'tao.steps': results.map((r) => r.step_id), 'tao.invalid_steps': invalid };
}

/**
 * What the console's pages read and do, through the same code as the CLI: a run's timeline
 * (`tao replay`), verify (`tao replay --verify`), fork (`tao replay --fork`), the dead letters and
 * their exactly-once re-drive (`tao dlq`), a person's decision on a run awaiting approval
 * (`tao approve|deny`) or reply to one awaiting input (`tao submit --reply`), and the loop's status
 * (`tao status`). The configuration
 * they need (today's Thought and Observation settings) is handed in by the composition root
 * (console/cli.ts); nothing here reads the environment.
 */
import type { Kafka } from 'kafkajs';
import { buildTask, decisionTask, submitTasks } from '../client/tasks.ts';
import { listDeadLetters, redriveDeadLetters, type DlqListing, type RedriveReport } from '../replay/dlq.ts';
import { planFork, writeFork } from '../replay/fork.ts';
import { readRunLog, type RunLog } from '../replay/log.ts';
import { renderVerify } from '../replay/render-reports.ts';
import { buildTimeline } from '../replay/build-timeline.ts';
import type { Timeline } from '../replay/timeline.ts';
import { verifyRun, type VerifyConfigs, type VerifyReport } from '../replay/verify.ts';
import { collectStatus, type StatusReport } from '../observability/status.ts';
import type { ThoughtConfig } from '../processors/thought/core.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { withProducer } from '../runtime/kafka.ts';
import type { Logger } from '../runtime/log.ts';
import type { ApprovalRequest, ReleasePointer, Task } from '../schemas/types.gen.ts';
import { readReleases } from '../runtime/release/records.ts';
import { refusedEdit, staleDecision, type DecisionRefusal } from '../ingress/decision-checks.ts';
import { readRunState } from '../ingress/run-streams.ts';
import type { EditChecks } from '../processors/thought/approval-rules.ts';
import { readRunSnapshot } from '../runtime/run-stream/snapshot.ts';

/** The console's read and write side over the log. */
export interface ConsoleActions {
  /** The run's timeline, or null when the log has no record of it. */
  timeline(thoughtId: string): Promise<Timeline | null>;
  /** The drift report and its text (as `tao replay --verify` prints it), or null for an unknown run. */
  verify(thoughtId: string): Promise<{ report: VerifyReport; text: string } | null>;
  /**
   * Forks the run from `point` (a wave number or a step id) into the live loop.
   * @throws ContractViolation when the point is not in the run or Thought would end the fork at once.
   */
  fork(thoughtId: string, point: string): Promise<{ thought_id: string; parent: string; point: string; iteration: number } | null>;
  deadLetters(filters: { topic: string | null; reason: string | null }): Promise<DlqListing>;
  /** Re-drives the chosen dead letters of one topic exactly once (a second re-drive reports them `already`). */
  redrive(topic: string, offsets: Array<{ partition: number; offset: string }>): Promise<RedriveReport>;
  /**
   * Writes a decision on a run awaiting approval, made by `who` (as `tao approve|deny` does); Thought
   * applies it once, or ignores it when the run no longer awaits approval. A decision naming an
   * interrupt is checked first as the ingress checks it (ingress/decision-checks.ts): one not pending
   * is refused 409, edited arguments the tool's contract or a skill policy refuses 422; nothing is written then.
   */
  decide(
    thoughtId: string,
    verdict: 'approve' | 'deny',
    who: string,
    options: { step: string | null; reason: string | null; interrupt?: string | null; arguments?: Record<string, unknown> | null },
  ): Promise<{ task_id: string } | { refused: DecisionRefusal }>;
  /** Writes `text` as the answer to a run awaiting input (as `tao submit --reply` does). */
  reply(thoughtId: string, text: string, who: string): Promise<{ task_id: string }>;
  status(): Promise<StatusReport>;
  /** The release pointer (tao.manifests, `tao rollout status`'s first line); null when none was recorded. */
  releasePointer(): Promise<ReleasePointer | null>;
}

export interface ActionDeps {
  kafka: Kafka;
  codec: AvroCodec;
  logger: Logger;
  /** Today's configurations to verify a run with (replay/verify-config.ts, from the environment). */
  verifyConfigs(log: RunLog): Promise<VerifyConfigs>;
  /** Today's Thought configuration, for forks. */
  thoughtConfig(): Promise<ThoughtConfig>;
  /** Stage processes' ops base URLs, for breakers and health. */
  statusEndpoints: readonly string[];
  /** How long a partition may take to be read to its end. */
  readTimeoutMs: number;
  /** What an edited call is checked against (processors/wiring `editChecks`), loaded on first use. */
  editChecks(): Promise<EditChecks>;
}

/** The actions over `deps`' cluster. */
export function consoleActions(deps: ActionDeps): ConsoleActions {
  const logDeps = { kafka: deps.kafka, codec: deps.codec, timeoutMs: deps.readTimeoutMs };
  const send = async (task: Task): Promise<{ task_id: string }> => {
    await deps.codec.register(['tasks']);
    await withProducer(deps.kafka, (producer) => submitTasks(producer, deps.codec, [task]));
    return { task_id: task.task_id };
  };
  let checks: Promise<EditChecks> | undefined;
  const runLog = async (id: string): Promise<RunLog | null> => {
    const log = await readRunLog(logDeps, id);
    return log.records.length === 0 && log.deadLetters.length === 0 ? null : log;
  };
  return {
    async timeline(id) {
      const log = await runLog(id);
      return log && buildTimeline(log);
    },
    async verify(id) {
      const log = await runLog(id);
      if (!log) return null;
      const report = await verifyRun(log, await deps.verifyConfigs(log));
      return { report, text: renderVerify(report) };
    },
    async fork(id, point) {
      const log = await runLog(id);
      if (!log) return null;
      const fork = planFork(log, { point, overrides: [], flow: null }, { thought: await deps.thoughtConfig() });
      await deps.codec.register(['thoughtRequests']);
      await withProducer(deps.kafka, (producer) => writeFork(producer, deps.codec, fork));
      deps.logger.info('run forked from the console', { parent: fork.parent, point: fork.point, thought_id: fork.thought_id });
      return { thought_id: fork.thought_id, parent: fork.parent, point: fork.point, iteration: fork.iteration };
    },
    deadLetters: (filters) => listDeadLetters(logDeps, filters),
    async redrive(topic, offsets) {
      const report = await redriveDeadLetters(logDeps, topic, { offsets });
      deps.logger.info('dead letters re-driven from the console', {
        topic,
        redriven: report.redriven.length,
        already: report.already.length,
        missing: report.missing.length,
      });
      return report;
    },
    async decide(id, verdict, who, options) {
      if (options.interrupt) {
        const view = await readRunState(deps, id);
        const stale = staleDecision(id, options.interrupt, view?.status ?? 'unknown', view?.outcome?.approval as ApprovalRequest | null | undefined);
        if ('status' in stale) return { refused: stale };
        if (options.arguments) {
          const snapshot = await readRunSnapshot(deps, id, deps.readTimeoutMs);
          const refused = refusedEdit(stale.call, options.arguments, snapshot?.run ?? null, await (checks ??= deps.editChecks()));
          if (refused) return { refused };
        }
      }
      const sent = await send(decisionTask(id, verdict, who, { ...options, source: 'console' }));
      deps.logger.info('decision written from the console', {
        thought_id: id,
        task_id: sent.task_id,
        verdict,
        step: options.step,
        interrupt: options.interrupt ?? null,
        edited: Boolean(options.arguments),
        decided_by: who,
      });
      return sent;
    },
    async reply(id, text, who) {
      const sent = await send(buildTask({ text, source: 'console', thought_id: id, metadata: { replied_by: who } }));
      deps.logger.info('reply written from the console', { thought_id: id, task_id: sent.task_id, replied_by: who });
      return sent;
    },
    status: () =>
      collectStatus({
        kafka: deps.kafka,
        codec: deps.codec,
        logger: deps.logger,
        endpoints: deps.statusEndpoints,
        readTimeoutMs: deps.readTimeoutMs,
        httpTimeoutMs: 2000,
      }),
    releasePointer: async () => (await readReleases(deps.kafka, deps.codec)).pointer,
  };
}

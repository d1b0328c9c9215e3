/**
 * `tao approve|deny THOUGHT_ID [--interrupt ID] [--arguments JSON] [--step S] [--reason TEXT] [--wait]`:
 * a person's decision on a run awaiting approval, written to `tao.tasks` as a DECISION task
 * (processors/thought/approval.ts); and `tao cancel THOUGHT_ID [--reason TEXT] [--wait]`, a CANCEL
 * task that ends a run `cancelled` (processors/thought/forced-end.ts). The record says who (the OS
 * user), when and what; Thought applies it once. A decision naming an interrupt that is no longer
 * pending, or whose edited arguments the tool's contract or a skill policy refuses, is refused: Thought
 * dead-letters it with why (`tao dlq list`).
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';

export const DECISION_USAGE = `usage: tao approve|deny <thought_id> [--interrupt ID] [--arguments JSON] [--step S] [--reason TEXT] [--wait] [--timeout-s 60]
  Decides a run awaiting approval (outcome status awaiting_approval): approve lets the parked calls
  run (exactly once); deny ends the run without them, or tells the run's model they were denied.
  --interrupt  decide this parked call (the outcome's approval.calls[].interrupt_id); a decision for
               an interrupt that is no longer pending is refused (dead-lettered DECISION_REFUSED)
  --arguments  approve only, with --interrupt: run the call with these arguments (a JSON object)
               instead of the proposed ones; the tool's contract and the skill's policies must accept them
  --step       decide only this step (approval.calls[].step_id); default: every pending call
  --reason     why, recorded with the decision (and shown to the model on deny)
  --wait       wait for the run's next outcome and print it; exit 0 when completed, 1 otherwise
  --timeout-s  how long --wait waits (default 60)
  The decision is recorded as made by the OS user running the command. Without --wait prints
  {"thought_id","task_id","verdict"}.`;

export const CANCEL_USAGE = `usage: tao cancel <thought_id> [--reason TEXT] [--wait] [--timeout-s 60]
  Ends a run that has not ended: its outcome is cancelled (reason cancelled), with who and why. A wave
  already dispatched may still run its calls, once; nothing after it is sent.
  --reason     why, recorded in the outcome
  --wait       wait for the run's outcome and print it; exit 0 when cancelled, 1 otherwise
  --timeout-s  how long --wait waits (default 60)
  Without --wait prints {"thought_id","task_id","verdict":"cancel"}.`;

/** Runs `tao approve`, `tao deny` or `tao cancel`; returns the exit code (2 for a usage error). */
export async function decisionCommand(verdict: 'approve' | 'deny' | 'cancel', args: string[]): Promise<number> {
  const usage = verdict === 'cancel' ? CANCEL_USAGE : DECISION_USAGE;
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        ...(verdict === 'cancel' ? {} : { step: { type: 'string' }, interrupt: { type: 'string' }, arguments: { type: 'string' } }),
        reason: { type: 'string' },
        wait: { type: 'boolean', default: false },
        'timeout-s': { type: 'string', default: '60' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    console.error(`tao ${verdict}: ${(err as Error).message}\n${usage}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(usage);
    return 0;
  }
  const values = parsed.values as { step?: string; interrupt?: string; arguments?: string; reason?: string };
  let edited: Record<string, unknown> | null = null;
  if (values.arguments !== undefined) {
    try {
      edited = JSON.parse(values.arguments) as Record<string, unknown>;
    } catch (err) {
      console.error(`tao ${verdict}: --arguments is not JSON (${(err as Error).message})\n${usage}`);
      return 2;
    }
  }
  const [thoughtId, ...extra] = parsed.positionals;
  const timeoutS = Number(parsed.values['timeout-s']);
  const problem = !thoughtId
    ? "needs the run's thought_id"
    : extra.length
      ? `takes one thought_id, got also "${extra.join(' ')}"`
      : !(timeoutS > 0)
        ? `--timeout-s must be a positive number of seconds, got "${parsed.values['timeout-s']}"`
        : values.arguments !== undefined && (edited === null || typeof edited !== 'object' || Array.isArray(edited))
          ? '--arguments must be a JSON object'
          : values.arguments !== undefined && (verdict !== 'approve' || !values.interrupt)
            ? '--arguments edits one call: it needs approve and --interrupt'
            : values.interrupt && values.step
              ? '--interrupt and --step both name the call: give one'
              : null;
  if (problem) {
    console.error(`tao ${verdict}: ${problem}\n${usage}`);
    return 2;
  }
  const [
    { cancelTask, decisionTask, submitTasks },
    { watchRecords },
    { AvroCodec },
    { createKafka, withProducer },
    { createLogger },
    { loadRuntimeConfig, setting },
  ] = await Promise.all([
    import('../client/tasks.ts'),
    import('../client/watch.ts'),
    import('../runtime/codec.ts'),
    import('../runtime/kafka.ts'),
    import('../runtime/log.ts'),
    import('../runtime/config.ts'),
  ]);
  const config = loadRuntimeConfig(process.env);
  const logger = createLogger({ command: verdict }, { level: setting(process.env, 'TAO_LOG_LEVEL'), write: (line) => process.stderr.write(line + '\n') });
  const kafka = createKafka(config, `tao-${verdict}`, logger);
  const codec = AvroCodec.create(config);
  await codec.register(['tasks']);
  const who = `user:${userInfo().username}`;
  const task =
    verdict === 'cancel'
      ? cancelTask(thoughtId!, who, { reason: values.reason || null, source: 'cli' })
      : decisionTask(thoughtId!, verdict, who, {
          step: values.step || null,
          interrupt: values.interrupt || null,
          arguments: edited,
          reason: values.reason || null,
          source: 'cli',
        });
  let outcome: Promise<Record<string, unknown>> | null = null;
  let watcher: { stop(): Promise<void> } | null = null;
  if (parsed.values.wait) {
    let resolve!: (v: Record<string, unknown>) => void;
    outcome = new Promise((r) => (resolve = r));
    watcher = await watchRecords(kafka, codec, { topics: ['outcomes'], from: 'end', onRecord: (r) => r.key === thoughtId && resolve(r.value) });
  }
  await withProducer(kafka, (producer) => submitTasks(producer, codec, [task]));
  if (!outcome) {
    console.log(JSON.stringify({ thought_id: thoughtId, task_id: task.task_id, verdict }));
    return 0;
  }
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([outcome, new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutS * 1000)))]);
  clearTimeout(timer);
  await watcher?.stop();
  if (!result) {
    console.error(
      `no outcome for ${thoughtId} within ${timeoutS} s after the ${verdict} (${verdict === 'cancel' ? 'has the run ended already?' : 'is the run awaiting approval? was the decision refused (tao dlq list)?'} are the stages running?)`,
    );
    return 1;
  }
  console.log(JSON.stringify(result));
  return result.status === (verdict === 'cancel' ? 'cancelled' : 'completed') ? 0 : 1;
}

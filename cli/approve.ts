/**
 * `tao approve|deny THOUGHT_ID [--step S] [--reason TEXT] [--wait]`: a person's decision on a run
 * awaiting approval, written to `tao.tasks` as a DECISION task (processors/thought/approval.ts). The
 * record says who (the OS user), when and what; Thought applies it once, and ignores it (with a
 * log line) when the run is no longer awaiting approval.
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';

export const DECISION_USAGE = `usage: tao approve|deny <thought_id> [--step S] [--reason TEXT] [--wait] [--timeout-s 60]
  Decides a run awaiting approval (outcome status awaiting_approval): approve lets the parked calls
  run (exactly once); deny ends the run without them, or tells the run's model they were denied.
  --step       decide only this step (the outcome's approval.calls[].step_id); default: every pending call
  --reason     why, recorded with the decision (and shown to the model on deny)
  --wait       wait for the run's next outcome and print it; exit 0 when completed, 1 otherwise
  --timeout-s  how long --wait waits (default 60)
  The decision is recorded as made by the OS user running the command. Without --wait prints
  {"thought_id","task_id","verdict"}.`;

/** Runs `tao approve` or `tao deny`; returns the exit code (2 for a usage error). */
export async function decisionCommand(verdict: 'approve' | 'deny', args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        step: { type: 'string' },
        reason: { type: 'string' },
        wait: { type: 'boolean', default: false },
        'timeout-s': { type: 'string', default: '60' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    console.error(`tao ${verdict}: ${(err as Error).message}\n${DECISION_USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(DECISION_USAGE);
    return 0;
  }
  const [thoughtId, ...extra] = parsed.positionals;
  const timeoutS = Number(parsed.values['timeout-s']);
  const problem = !thoughtId
    ? "needs the run's thought_id"
    : extra.length
      ? `takes one thought_id, got also "${extra.join(' ')}"`
      : !(timeoutS > 0)
        ? `--timeout-s must be a positive number of seconds, got "${parsed.values['timeout-s']}"`
        : null;
  if (problem) {
    console.error(`tao ${verdict}: ${problem}\n${DECISION_USAGE}`);
    return 2;
  }
  const [{ decisionTask, submitTasks }, { watchRecords }, { AvroCodec }, { createKafka, withProducer }, { createLogger }, { loadRuntimeConfig, setting }] =
    await Promise.all([
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
  const task = decisionTask(thoughtId!, verdict, `user:${userInfo().username}`, {
    step: parsed.values.step || null,
    reason: parsed.values.reason || null,
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
    console.error(`no outcome for ${thoughtId} within ${timeoutS} s after the ${verdict} (is the run awaiting approval? are the stages running?)`);
    return 1;
  }
  console.log(JSON.stringify(result));
  return result.status === 'completed' ? 0 : 1;
}

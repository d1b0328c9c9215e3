/**
 * `tao submit --text "..."`: writes a task (or, with --reply, a person's answer to a run awaiting
 * input) to `tao.tasks`, and with --wait follows `tao.outcomes` until the run's outcome arrives.
 */
import { parseArgs } from 'node:util';
import { loadRuntimeConfig, setting } from '../runtime/config.ts';
import { usage } from './usage.ts';

/** Runs `tao submit <args>`; resolves with 0 (submitted, or completed with --wait), 1 (another outcome or none in time) or 2 (a usage error; `text` is the usage printed). */
export async function submitCommand(args: string[], text: string): Promise<number> {
  const [{ buildTask, submitTasks }, { watchRecords }, { AvroCodec }, { createKafka, withProducer }, { createLogger }] = await Promise.all([
    import('../client/tasks.ts'),
    import('../client/watch.ts'),
    import('../runtime/codec.ts'),
    import('../runtime/kafka.ts'),
    import('../runtime/log.ts'),
  ]);
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        text: { type: 'string' },
        source: { type: 'string', default: 'cli' },
        'external-id': { type: 'string' },
        reply: { type: 'string' },
        wait: { type: 'boolean', default: false },
        'timeout-s': { type: 'string', default: '60' },
      },
    }));
  } catch (err) {
    return usage(`tao submit: ${(err as Error).message}`, text);
  }
  if (!values.text) return usage('submit needs --text "..."', text);
  const timeoutS = Number(values['timeout-s']);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) return usage(`--timeout-s must be a positive number of seconds, got "${values['timeout-s']}"`, text);
  const config = loadRuntimeConfig(process.env);
  const logger = createLogger({ command: 'submit' }, { level: setting(process.env, 'TAO_LOG_LEVEL'), write: (line) => process.stderr.write(line + '\n') });
  const kafka = createKafka(config, 'tao-submit', logger);
  const codec = AvroCodec.create(config);
  await codec.register(['tasks']);
  const task = buildTask({ text: values.text, source: values.source, external_id: values['external-id'] ?? null, thought_id: values.reply });
  let outcome: Promise<Record<string, unknown>> | null = null;
  let watcher: { stop(): Promise<void> } | null = null;
  if (values.wait) {
    let resolve!: (v: Record<string, unknown>) => void;
    outcome = new Promise((r) => (resolve = r));
    watcher = await watchRecords(kafka, codec, { topics: ['outcomes'], from: 'end', onRecord: (r) => r.key === task.thought_id && resolve(r.value) });
  }
  await withProducer(kafka, (producer) => submitTasks(producer, codec, [task]));
  if (!outcome) {
    console.log(JSON.stringify({ thought_id: task.thought_id, task_id: task.task_id }));
    return 0;
  }
  const timeoutMs = timeoutS * 1000;
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([outcome, new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutMs)))]);
  clearTimeout(timer);
  await watcher?.stop();
  if (!result) {
    console.error(`no outcome for ${task.thought_id} within ${values['timeout-s']} s (are the stages running? try: npx tao run all)`);
    return 1;
  }
  console.log(JSON.stringify(result));
  return result.status === 'completed' ? 0 : 1;
}

/**
 * The infra lock: serialises up/down/startKafka/stopKafka across processes (parallel test workers,
 * the CLI) on the same infra dir.
 */
import { withFileLock } from '../process.ts';
import type { InfraOptions, Paths } from './options.ts';

const LOCK_WAIT_MS = 15 * 60_000;

export function withLock<T>(o: InfraOptions, p: Paths, work: () => Promise<T>): Promise<T> {
  return withFileLock(
    p.lock,
    { label: 'infra', command: 'tao infra', holderDoes: 'runs another tao infra command', waitMs: LOCK_WAIT_MS, progressEveryMs: 60_000, log: o.log },
    work,
  );
}

/**
 * The infra lock: serialises up/down/startKafka/stopKafka across processes (parallel test workers,
 * the CLI) on the same infra dir.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isErrno, readPid, signalable } from '../process.ts';
import { InfraError } from './errors.ts';
import type { InfraOptions, Paths } from './options.ts';

const LOCK_WAIT_MS = 15 * 60_000;

export async function withLock<T>(o: InfraOptions, p: Paths, work: () => Promise<T>): Promise<T> {
  await mkdir(p.run, { recursive: true });
  const mine = join(p.run, `infra.lock.${process.pid}.${randomBytes(4).toString('hex')}`);
  await writeFile(mine, `${process.pid}\n`);
  const deadline = Date.now() + LOCK_WAIT_MS;
  let announced = false;
  try {
    for (;;) {
      try {
        // link() is atomic and fails if the lock exists, and the lock never exists without its pid.
        await link(mine, p.lock);
        break;
      } catch (err) {
        if (!isErrno(err, 'EEXIST')) throw err;
      }
      const holder = await readPid(p.lock);
      if (holder === undefined || !signalable(holder)) {
        o.log(`infra: removing stale lock ${p.lock} (holder ${holder ?? '?'} is gone)`);
        await rm(p.lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new InfraError(
          'PROCESS_FAILED',
          `infra: ${p.lock} has been held by pid ${holder} for over ${LOCK_WAIT_MS / 60_000} min; if no tao infra command is running, delete the file`,
        );
      }
      if (!announced) {
        o.log(`infra: waiting for another tao infra command (pid ${holder}) to finish…`);
        announced = true;
      }
      await sleep(250);
    }
  } finally {
    await unlink(mine);
  }
  try {
    return await work();
  } finally {
    await rm(p.lock, { force: true });
  }
}

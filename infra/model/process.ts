/**
 * The local model server's error (infra/model/), with the process helpers it shares with
 * infra/local.ts (infra/process.ts: commands, pid files, signals, the lock file) re-exported.
 */
import { InfraError, type InfraErrorCode } from '../local/errors.ts';

/** infra/model/'s failures have the local infrastructure's codes (infra/local/errors.ts). */
export type ModelErrorCode = InfraErrorCode;

/** Every failure of infra/model/: the local infrastructure's error, named for the model server; `code` says what went wrong, the message what to do about it. */
export class ModelError extends InfraError {}

export {
  errorText,
  isErrno,
  elapsed,
  run,
  probe,
  lastLines,
  logTail,
  readPid,
  signalable,
  signalGroup,
  waitUntilHealthy,
  withFileLock,
  type Health,
  type LockOptions,
  type RunResult,
} from '../process.ts';

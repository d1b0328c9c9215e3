/**
 * The one error the local infrastructure throws, {@link InfraError}, and its closed set of codes
 * (the model server's `ModelError`, infra/model/process.ts, is one by another name).
 */

export type InfraErrorCode =
  /** A tool needed to fetch, build or run a component (`java`, `mvn`, `go`; for the model server `python3 -m pip`, `cmake`, `ninja`, a C/C++ compiler) is missing or too old. */
  | 'PREREQUISITE_MISSING'
  /** A port the infra must bind is held by a process this tool did not start. */
  | 'PORT_IN_USE'
  /** A component started but did not pass its health check in time (it is stopped again). */
  | 'HEALTH_TIMEOUT'
  /** Fetching the Kafka jars, building the registry binary, or downloading the wheels or building llama-server failed. */
  | 'BUILD_FAILED'
  /** The options (or TAO_* variables) are invalid, or a model server already runs with other ones. */
  | 'CONFIG_INVALID'
  /** A component exited during start-up, could not be formatted, signalled or stopped, or the infra lock stayed held. */
  | 'PROCESS_FAILED';

/** Every failure of the infra functions; `code` says what went wrong, the message what to do about it. */
export class InfraError extends Error {
  readonly code: InfraErrorCode;

  constructor(code: InfraErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

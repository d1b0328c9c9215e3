/**
 * How a long-running `tao` process (a stage, a server, `tao run all`, `tao ui`) ends: on SIGTERM or
 * SIGINT it stops what it started, once, and exits 0, or 1 with a line when the stop fails.
 */

/** Wires SIGTERM and SIGINT to `stop`, then exits 0 (1, saying why, when `stop` rejects); a second signal while stopping is ignored. */
export function onSignal(stop: () => Promise<unknown>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      (err: Error) => {
        console.error(`unclean stop: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

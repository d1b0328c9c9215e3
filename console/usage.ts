/** Usage text of `tao ui`, kept apart so `tao --help` loads no console code. */
export const UI_USAGE = `usage: tao ui [--port 7088] [--host 127.0.0.1] [--timeout-s 60]
  The operator console in the browser: runs (live), a run's timeline with its model turns, verify,
  fork, approve, deny and reply (a run awaiting approval or input), dead letters with an exactly-once re-drive, and the loop's health (lag, members, rates,
  breakers). One process reading the committed log (read_committed); its index of runs is rebuilt
  from the topics at every start (the time it took is logged) and kept current from the log, pushed
  to the browser as server-sent events.
  --port       port to listen on (default TAO_UI_PORT, 7088; 0: any free port)
  --host       address to bind (default TAO_UI_HOST, 127.0.0.1). Loopback needs no key; any other
               address needs an API key with the console scope (tao ingress key --scopes console,
               in TAO_INGRESS_KEYS_FILE or TAO_INGRESS_API_KEYS) and answers 401 without it;
               approve, deny and reply need the approve scope as well (--scopes console,approve)
  --timeout-s  how long a partition may take to be read to its end (a run, dead letters; default 60)
  Reads KAFKA_*, SCHEMA_REGISTRY_*, TAO_NAMESPACE; for verify and fork the stages' settings (as
  tao replay); TAO_STATUS_ENDPOINTS for breakers. Runs with its own V8 flags
  (bin/console-node-flags.json: a 256 MiB heap). docs/CONSOLE.md has the details.`;

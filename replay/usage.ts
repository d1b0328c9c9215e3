/** Usage texts of `tao replay` and `tao dlq`, kept apart so `tao --help` loads no replay code. */
export const REPLAY_USAGE = `usage: tao replay <thought_id> [--format terminal|json|html] [--out file] [--from ISO-time] [--to ISO-time]
                  [--verify [--release <folder>]]
                  [--fork <wave|step> [--set STEP.field=value ...] [--flow <flow id>@<version>]]
                  [--timeout-s 60]
  Rebuilds one run from the log (its partition of every loop topic, thought.runs and the dead-letter
  topics, read_committed) and prints its timeline; --format html writes a self-contained report.
  --from, --to   only records within these times
  --verify       re-decides every recorded input with today's Thought and Observation, asking no tool
                 or model, under the release the run was made on (its manifest in tao.manifests; the
                 shell's settings for a run recorded without one); exit 0 when every decision is as
                 recorded, 1 on drift. Another flow, routing table, Observation rules or classifier is
                 configuration drift, reported apart from code drift
  --release      with --verify: re-decide under this release folder instead (docs/RELEASES.md), to
                 see where a run would have gone otherwise
  --fork         starts a new run from a wave (2) or the first wave that ran a step (S2) in the live
                 loop, under a new thought_id (printed); --set S2.field=value changes a step's input,
                 --flow re-plans on another flow version; the parent's records are not touched
  --timeout-s    how long a partition may take to be read to its end (default 60)
  Reads KAFKA_*, SCHEMA_REGISTRY_*, TAO_NAMESPACE, and for --verify/--fork the stages' settings.
  Exit 2 on bad arguments. docs/REPLAY.md has the details.`;
export const DLQ_USAGE = `usage: tao dlq list [--topic <topic>] [--reason <code>] [--format terminal|json]
       tao dlq show <dlq topic> <partition> <offset> [--format terminal|json]
       tao dlq redrive <dlq topic> (--reason <code> | --key <thought_id> | --offsets p:o,... | --all) [--format terminal|json]
  list     counts of dead letters by topic and error code (and how many were re-driven), then one row each
  show     one dead letter: its headers and the original record decoded, or why it does not decode
  redrive  copies the selected dead letters back to their source topic and partition, exactly once (a
           Kafka transaction with the re-drive ledger): re-driving the same selection again writes nothing
  Topics by base name (thought.requests), with .dlq, or with the namespace prefix. docs/REPLAY.md has the details.`;
/** `tao eval --from-log` (cli/eval-from-log.ts; docs/REPLAY.md, Evaluating against recorded runs). */
export const EVAL_FROM_LOG_USAGE = `usage: tao eval --from-log [--release <folder>] [--since ISO-time] [--until ISO-time]
                [--skill <name>[,<name>...]] [--status <status>[,...]] [--limit N]
                [--live-reads] [--base-url <url> --model <name>] [--json] [--timeout-s 60]
  Re-runs recorded runs (read from the log, read_committed) under a candidate release and reports the
  runs whose outcome, answer facts or tool calls changed, each with the step where it diverged.
  Thought and Observation re-decide as replay --verify does. A model turn whose request is unchanged,
  and a tool call with the same tool and arguments as a recorded one, read the recorded answer; a
  changed model request asks the candidate's model; any other call is NOT made: the run diverges
  there (a tool the catalog declares "side_effects": false is called live with --live-reads).
  --release     the candidate: a release folder (skills/, catalog/, flows/, settings.json, ...);
                without it, the configuration of this environment (TAO_*)
  --since, --until   runs whose first task was written within these times
  --skill       runs of these skills (a model's skill, or a flow's id)
  --status      runs whose last outcome has this status (completed, failed, escalated, ...)
  --limit       at most N runs, the earliest first
  --live-reads  allow live calls of tools free of side effects
  --base-url, --model   the candidate's model (an OpenAI-compatible base up to /v1), for changed model turns
  --json        the tao.eval.from-log.v1 document instead of the terminal report
  Reads KAFKA_*, SCHEMA_REGISTRY_*, TAO_NAMESPACE and the stages' TAO_* settings. Exit 0 when no run
  diverged, 1 when one did (or the evaluation can't be carried out), 2 on bad arguments.
  docs/REPLAY.md ("Evaluating against recorded runs") has the details.`;

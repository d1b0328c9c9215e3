/** Usage texts of `tao replay` and `tao dlq`, kept apart so `tao --help` loads no replay code. */
export const REPLAY_USAGE = `usage: tao replay <thought_id> [--format terminal|json|html] [--out file] [--from ISO-time] [--to ISO-time]
                  [--verify]
                  [--fork <wave|step> [--set STEP.field=value ...] [--flow <flow id>@<version>]]
                  [--timeout-s 60]
  Rebuilds one run from the log (its partition of every loop topic, thought.runs and the dead-letter
  topics, read_committed) and prints its timeline; --format html writes a self-contained report.
  --from, --to   only records within these times
  --verify       re-decides every recorded input with today's Thought and Observation, asking no tool
                 or model; exit 0 when every decision is as recorded, 1 on drift. Another flow, routing
                 table, Observation rules or classifier today is configuration drift, reported apart
                 from code drift
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

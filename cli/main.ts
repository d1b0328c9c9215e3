/**
 * The `tao` command. Every sub-command is wired here, in one visible place, with its usage text
 * (USAGES, in cli/usage.ts): `tao <command> --help` (or `-h`, or `tao help <command>`) prints it and
 * exits 0; an unknown command or flag prints one line and the usage and exits 2; a setup problem (a
 * bad setting, topics not applied) prints one line and exits 1.
 */
// Each command loads its modules when it runs (dynamic imports below), so `tao --help` and a
// usage error answer at once instead of loading Kafka, ONNX and every stage first.
import { TaoError } from '../runtime/errors.ts';
import { checkStartupEnvironment, configCommand } from './config-command.ts';
import { onSignal } from './signals.ts';
import { USAGE, USAGES, parse, usage, wantsHelp } from './usage.ts';

/** Runs one `tao` command; resolves with the exit code, or -1 for a long-running process that exits on a signal. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') {
    console.log(USAGE);
    return 0;
  }
  if (command === 'help') {
    const topic = rest[0];
    if (topic !== undefined && !USAGES[topic]) return usage(`unknown command "${topic}"`);
    console.log(topic === undefined ? USAGE : USAGES[topic]);
    return 0;
  }
  const text = USAGES[command];
  if (!text) return usage(`unknown command "${command}"`);
  // `run model-sim`, `skills` and `eval --from-log` parse their own flags (and answer --help themselves).
  const ownHelp =
    (command === 'run' && (rest[0] === 'model-sim' || rest[0] === 'mcp-tools')) ||
    command === 'skills' ||
    command === 'config' ||
    command === 'tools' ||
    (command === 'eval' && rest.includes('--from-log'));
  if (wantsHelp(rest) && !ownHelp) {
    console.log(text);
    return 0;
  }
  try {
    // Every command refuses a bad or unknown variable before it starts anything (`tao config` lists them).
    if (command !== 'config' && !wantsHelp(rest)) checkStartupEnvironment(process.env);
    return await dispatch(command, rest, text);
  } catch (err) {
    // A setup problem (a bad setting, topics not applied) is one line, not a stack trace.
    if (err instanceof TaoError && err.code === 'CONFIG_INVALID') {
      console.error(`tao: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

/** The commands that read their own arguments and flags: each module is loaded when its command runs. */
const SELF_PARSING: Record<string, () => Promise<(args: string[]) => Promise<number>>> = {
  model: async () => (await import('./model-command.ts')).modelCommand,
  tools: async () => (await import('./tools-command.ts')).toolsCommand,
  skills: async () => (await import('./skills.ts')).skillsCommand,
  ingress: async () => (await import('../ingress/cli.ts')).ingressCommand,
  tail: async () => (await import('../observability/cli.ts')).tailCommand,
  status: async () => (await import('../observability/cli.ts')).statusCommand,
  replay: async () => (await import('../replay/cli.ts')).replayCommand,
  dlq: async () => (await import('../replay/cli.ts')).dlqCommand,
  eval: async () => (await import('./eval-command.ts')).evalCommand,
  manifest: async () => async (args) => (await import('./release-command.ts')).releaseCommand('manifest', args),
  rollout: async () => async (args) => (await import('./release-command.ts')).releaseCommand('rollout', args),
};

async function dispatch(command: string, args: string[], text: string): Promise<number> {
  const load = SELF_PARSING[command];
  if (load) return (await load())(args);
  switch (command) {
    case 'infra': {
      const parsed = parse(command, args, text, { docker: { type: 'boolean', default: false }, brokers: { type: 'string' } });
      if (typeof parsed === 'number') return parsed;
      const sub = parsed.positionals.join(' ') || undefined;
      const raw = parsed.values.brokers;
      const docker = parsed.values.docker === true;
      if (raw === undefined) return (await import('./infra-command.ts')).infraCommand(sub, { docker });
      if (sub !== 'up') return usage(`--brokers goes with infra up (down and status find the running infra's size)`, text);
      if (docker) return usage('--brokers and --docker do not go together: the containers run one broker', text);
      const brokers = Number(raw);
      if (!/^[1-5]$/.test(String(raw)) || !Number.isInteger(brokers)) return usage(`--brokers must be a whole number from 1 to 5, got "${String(raw)}"`, text);
      return (await import('./infra-command.ts')).infraCommand(sub, { docker, nodes: brokers });
    }
    case 'topics': {
      const parsed = parse(command, args, text, {});
      if (typeof parsed === 'number') return parsed;
      if (parsed.positionals.length !== 1 || parsed.positionals[0] !== 'apply') return usage(`unknown topics command "${parsed.positionals.join(' ')}"`, text);
      return topicsApply();
    }
    case 'run': {
      if (args[0] === 'model-sim') return (await import('../model-sim/cli.ts')).modelSimCommand(args.slice(1), onSignal);
      if (args[0] === 'mcp-tools') return (await import('./tools-command.ts')).mcpToolsCommand(args.slice(1), onSignal);
      const parsed = parse(command, args, text, { 'apply-topics': { type: 'boolean', default: false } });
      if (typeof parsed === 'number') return parsed;
      const [name, ...extra] = parsed.positionals;
      return (await import('./run-command.ts')).runCommand(name, extra, parsed.values['apply-topics'] === true, text);
    }
    case 'submit':
      return (await import('./submit.ts')).submitCommand(args, text);
    case 'approve':
    case 'deny':
    case 'cancel':
      return (await import('./approve.ts')).decisionCommand(command, args);
    case 'ui':
      return (await import('../console/cli.ts')).uiCommand(args, onSignal);
    case 'classify-error': {
      const parsed = parse(command, args, text, {});
      if (typeof parsed === 'number') return parsed;
      if (parsed.positionals.length !== 1) return usage('classify-error needs one file, or - for standard input', text);
      return (await import('./classify-command.ts')).classifyErrorCommand(parsed.positionals[0]!);
    }
    case 'classify': {
      const parsed = parse(command, args, text, {});
      return typeof parsed === 'number' ? parsed : (await import('./classify-command.ts')).classifyCommand(parsed.positionals.join(' '), text);
    }
    case 'demo': {
      const parsed = parse(command, args, text, {
        'keep-infra': { type: 'boolean', default: false },
        planner: { type: 'string' },
        model: { type: 'string' },
        'tool-calls': { type: 'string' },
      });
      if (typeof parsed === 'number') return parsed;
      if (parsed.positionals.length) return usage(`demo takes no arguments (got ${parsed.positionals.join(' ')})`, text);
      const planner = parsed.values.planner;
      if (planner !== undefined && planner !== 'router' && planner !== 'react')
        return usage(`--planner must be router or react, got "${String(planner)}"`, text);
      const model = parsed.values.model ?? 'local';
      if (model !== 'local' && model !== 'sim') return usage(`--model must be local or sim, got "${String(model)}"`, text);
      const toolCalls = parsed.values['tool-calls'] ?? 'native';
      if (toolCalls !== 'native' && toolCalls !== 'json_schema') return usage(`--tool-calls must be native or json_schema, got "${String(toolCalls)}"`, text);
      if (planner !== 'react' && (parsed.values.model !== undefined || parsed.values['tool-calls'] !== undefined))
        return usage('--model and --tool-calls apply to --planner react only', text);
      return (await import('./demo.ts')).runDemo({ keepInfra: parsed.values['keep-infra'] === true, planner: planner ?? 'router', model, toolCalls });
    }
    case 'config':
      return configCommand(args);
    default:
      return usage(`unknown command "${command}"`);
  }
}

async function topicsApply(): Promise<number> {
  const { applyCatalog } = await import('../runtime/apply-catalog.ts');
  await applyCatalog(process.env);
  return 0;
}

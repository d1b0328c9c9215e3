/**
 * `tao infra up|down|status`: the local Kafka broker(s) and schema registry (infra/local.ts), or with
 * `up --docker` the same as containers that live as long as the command runs (infra/mode.ts).
 */
import { onSignal } from './signals.ts';
import { USAGES, usage } from './usage.ts';

/** Runs `tao infra <sub>` with its flags already checked; resolves with the exit code, or -1 while containers run until a signal. */
export async function infraCommand(sub: string | undefined, options: { docker: boolean; nodes?: number }): Promise<number> {
  const [infra, { startInfra }] = await Promise.all([import('../infra/local.ts'), import('../infra/mode.ts')]);
  const log = (line: string) => console.log(line);
  if (options.docker && sub !== 'up') return usage('--docker goes with `infra up` only: the containers live as long as that command runs', USAGES.infra);
  switch (sub) {
    case 'up': {
      if (!options.docker) {
        const { brokers, registryUrl } = await infra.up({ env: process.env, log, brokers: options.nodes });
        console.log(`KAFKA_BROKERS=${brokers}\nSCHEMA_REGISTRY_URL=${registryUrl}`);
        return 0;
      }
      const started = await startInfra('docker', { env: process.env, log });
      console.log(`KAFKA_BROKERS=${started.brokers}\nSCHEMA_REGISTRY_URL=${started.registryUrl}`);
      // testcontainers' reaper removes the containers when this process ends, so it stays in the foreground.
      console.log('containers running; Ctrl-C removes them');
      onSignal(() => started.stop());
      return -1;
    }
    case 'down':
      await infra.down({ env: process.env, log });
      return 0;
    case 'status': {
      const components = await infra.status({ env: process.env, log });
      for (const c of components)
        console.log(
          `${c.name.padEnd(16)} ${c.running ? (c.healthy ? 'healthy' : 'running, NOT healthy') : 'stopped'}  ${c.url}${c.pid ? `  pid ${c.pid}` : ''}  log ${c.log}`,
        );
      return components.every((c) => c.healthy) ? 0 : 1;
    }
    default:
      return usage(`unknown infra command "${sub ?? ''}"`, USAGES.infra);
  }
}

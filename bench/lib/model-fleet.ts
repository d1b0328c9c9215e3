/**
 * What the commands that run tickets through the real loop against a model share
 * (`npm run models:eval-loop`, `npm run models:patterns`): the model endpoint (cli/model-endpoint.ts), the
 * ingress as a process, posting a ticket to it, and a clean-up that also runs on Ctrl-C.
 */
import type { Fleet } from './harness.ts';
import { startIngressProcess as startIngress } from '../../eval/fleet.ts';

export { modelEndpoint, type ModelEndpoint } from '../../cli/model-endpoint.ts';

/** Starts `tao run ingress` on an ephemeral port in `fleet` (eval/fleet.ts); resolves with its URL. */
export async function startIngressProcess(fleet: Fleet, env: NodeJS.ProcessEnv): Promise<string> {
  return (await startIngress(fleet, env)).url;
}

/** Posts a ticket to the ingress (`POST /v1/tasks`); resolves with its run's thought_id. */
export async function postTicket(ingressUrl: string, text: string, source: string, externalId: string): Promise<string> {
  const res = await fetch(`${ingressUrl}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text, source, external_id: externalId }),
  });
  if (res.status !== 202) throw new Error(`ingress answered ${res.status} to ${externalId}: ${await res.text()}`);
  return ((await res.json()) as { thought_id: string }).thought_id;
}

/**
 * Runs `cleanUp` on SIGINT or SIGTERM, then exits 130: Ctrl-C or a kill stops the processes the
 * command started and deletes its namespace, as the end of a run does.
 */
export function cleanUpOnSignal(say: (line: string) => void, cleanUp: () => Promise<void>): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      say(`${signal}: stopping the stages and deleting the namespace`);
      void cleanUp().finally(() => process.exit(130));
    });
}

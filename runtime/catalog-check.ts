import type { Admin } from 'kafkajs';
import type { RuntimeConfig } from './config.ts';
import { ConfigError, TransientError, errorMessage } from './errors.ts';
import type { Kafka } from 'kafkajs';
import { applyCatalogWith } from './apply-catalog.ts';
import { DEAD_LETTERED, TOPICS, topicNames, type TopicId, type TopicNames } from '../topics/catalog.ts';

/** What a process needs of the catalog before it starts: its topics (and their dead-letter topics) and their value schemas. */
export interface CatalogNeeds {
  topics: readonly TopicId[];
  /** Topics whose dead-letter topic must exist too (the ones the process consumes). */
  deadLettered?: readonly TopicId[];
}

/** Everything a catalog topic has, for `tao run all`, which starts every process. */
export const WHOLE_CATALOG: CatalogNeeds = { topics: Object.keys(TOPICS) as TopicId[], deadLettered: DEAD_LETTERED };

/** The hint every missing piece ends with. */
const APPLY_HINT = 'run `npx tao topics apply` first, or start with --apply-topics';

/**
 * Checks that the topics and value-schema subjects a process needs exist, with one metadata request
 * (`listTopics`) and one registry request (`GET /subjects`), so that a process started on fresh
 * infrastructure or in a new TAO_NAMESPACE stops with one line saying what to run instead of failing
 * later inside kafkajs ("This server does not host this topic-partition").
 * @throws ConfigError naming the first missing topic (or subject), how many more are missing, and the command to run.
 * @throws TransientError when the registry cannot be asked.
 */
export async function assertCatalogApplied(admin: Admin, config: RuntimeConfig, names: TopicNames, needs: CatalogNeeds): Promise<void> {
  const namespace = names.namespace ? `namespace "${names.namespace}"` : 'no TAO_NAMESPACE';
  const wantedTopics = [...new Set([...needs.topics.map((id) => names.name(id)), ...(needs.deadLettered ?? []).map((id) => names.dlq(id))])];
  const existing = new Set(await admin.listTopics());
  const missingTopics = wantedTopics.filter((t) => !existing.has(t));
  if (missingTopics.length) throw new ConfigError(`topic "${missingTopics[0]}"${more(missingTopics)} does not exist (${namespace}); ${APPLY_HINT}`);

  const wantedSubjects = [...new Set(needs.topics)].filter((id) => TOPICS[id].valueSchema !== null).map((id) => `${names.name(id)}-value`);
  const subjects = new Set(await registrySubjects(config));
  const missingSubjects = wantedSubjects.filter((s) => !subjects.has(s));
  if (missingSubjects.length)
    throw new ConfigError(
      `schema subject "${missingSubjects[0]}"${more(missingSubjects)} is not registered at ${config.registry.url} (${namespace}); ${APPLY_HINT}`,
    );
}

/**
 * What a process does about the catalog at start-up, once Kafka answers: with `apply`, applies it
 * (every topic and schema, as `tao topics apply` does, printing each line through `print`);
 * otherwise checks what `needs` names with {@link assertCatalogApplied}.
 */
export async function prepareCatalog(
  kafka: Kafka,
  config: RuntimeConfig,
  needs: CatalogNeeds,
  options: { apply: boolean; print: (line: string) => void },
): Promise<void> {
  if (options.apply) return applyCatalogWith(config, kafka, options.print);
  const admin = kafka.admin();
  await admin.connect();
  try {
    await assertCatalogApplied(admin, config, topicNames(config.namespace), needs);
  } finally {
    await admin.disconnect();
  }
}

function more(missing: string[]): string {
  return missing.length > 1 ? ` (and ${missing.length - 1} more)` : '';
}

async function registrySubjects(config: RuntimeConfig): Promise<string[]> {
  const { url, username, password } = config.registry;
  const headers: Record<string, string> = { accept: 'application/vnd.schemaregistry.v1+json, application/json' };
  if (username && password) headers.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  let res: Response;
  try {
    res = await fetch(new URL('subjects', url.endsWith('/') ? url : `${url}/`), { headers, signal: AbortSignal.timeout(10000) });
  } catch (err) {
    throw new TransientError(`schema registry at ${url} unreachable: ${errorMessage(err)}`, { cause: err });
  }
  if (!res.ok) throw new TransientError(`schema registry at ${url} answered HTTP ${res.status} to GET /subjects`);
  const body: unknown = await res.json();
  if (!Array.isArray(body)) throw new TransientError(`schema registry at ${url} answered GET /subjects with something other than a list`);
  return body.map(String);
}

/**
 * The A2A agent card (`GET /.well-known/agent-card.json`, A2A v1.0 `AgentCard`): who the agent is,
 * where its JSON-RPC endpoint is (`POST /a2a` on the ingress), that it streams, how to
 * authenticate (a bearer ingress API key) and its skills, one per `skills/<name>/SKILL.md`.
 * docs/A2A.md.
 */
import { AgentCard } from '@a2a-js/sdk';
import { packageVersion } from '../../runtime/paths.ts';
import { DEFAULT_SKILLS_DIR, loadSkills } from '../../processors/thought/skills.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog } from '../../tools/catalog.ts';

/** The path of the JSON-RPC endpoint on the ingress. */
export const A2A_PATH = '/a2a';

/** One skill as the card lists it. */
export interface A2aSkill {
  /** The skill's name (its folder). */
  id: string;
  description: string;
  /** Its intents (metadata.intents), as the card's tags. */
  tags: string[];
  /** Example requests (metadata.examples, `|`-separated), if the skill gives any. */
  examples: string[];
}

/**
 * The skills of `dir` (TAO_SKILLS_DIR), checked against the tool catalog of `catalogDir` as Thought
 * checks them.
 * @throws ConfigError for a skill that does not load.
 */
export function a2aSkillsFrom(dir = DEFAULT_SKILLS_DIR, catalogDir = DEFAULT_CATALOG_DIR, env: NodeJS.ProcessEnv = {}): A2aSkill[] {
  return loadSkills(dir, ToolCatalog.load(catalogDir, env))
    .list()
    .map((s) => ({
      id: s.name,
      description: s.description,
      tags: s.intents,
      examples: (s.metadata?.examples ?? '')
        .split('|')
        .map((e) => e.trim())
        .filter(Boolean),
    }));
}

/** The card, in the protocol's JSON form, for an endpoint at `baseUrl` (no trailing slash). */
export function agentCardJson(baseUrl: string, skills: readonly A2aSkill[]): Record<string, unknown> {
  return {
    name: 'tao-kafka',
    description:
      'A Kafka-native agent runtime: each message starts a run of the Thought-Action-Observation loop (a task id is a run id); runs that need a reply or an approval turn input-required.',
    supportedInterfaces: [{ url: `${baseUrl}${A2A_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    provider: { organization: 'tao-kafka', url: 'https://github.com/tao-kafka' },
    version: packageVersion(),
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          description: 'an ingress API key (`tao ingress key`): scope tasks to send and cancel, read to get and subscribe, approve to answer an approval',
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: skills.map((s) => ({ id: s.id, name: s.id, description: s.description, tags: s.tags, examples: s.examples })),
  };
}

/** The card as the SDK's request handler takes it. */
export function agentCard(baseUrl: string, skills: readonly A2aSkill[]): AgentCard {
  return AgentCard.fromJSON(agentCardJson(baseUrl, skills));
}

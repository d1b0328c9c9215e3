import { AvroCodec } from './codec.ts';
import type { Kafka } from 'kafkajs';
import { loadRuntimeConfig, type RuntimeConfig } from './config.ts';
import { createKafka } from './kafka.ts';
import { createLogger } from './log.ts';
import { applyTopics } from '../topics/apply.ts';
import { TOPICS, type TopicId } from '../topics/catalog.ts';

/** Applies the topic catalog and registers every value schema; exported for the demo and tests. */
export async function applyCatalog(env: NodeJS.ProcessEnv, print: (line: string) => void = console.log): Promise<void> {
  const config = loadRuntimeConfig(env);
  await applyCatalogWith(config, createKafka(config, 'tao-topics', createLogger({ command: 'topics' }, { level: config.logLevel })), print);
}

/** {@link applyCatalog} for a configuration already loaded, through a client already made (a process applying the catalog at start-up). */
export async function applyCatalogWith(config: RuntimeConfig, kafka: Kafka, print: (line: string) => void): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const codec = AvroCodec.create(config);
    for (const report of await applyTopics(admin, codec.topics))
      print(`${report.action.padEnd(9)} ${report.topic}${report.details.length ? `  (${report.details.join('; ')})` : ''}`);
    await codec.register(Object.keys(TOPICS) as TopicId[]);
    print(`schemas registered under <topic>-value with BACKWARD compatibility at ${config.registry.url}`);
  } finally {
    await admin.disconnect();
  }
}

import { Kafka, logLevel, type KafkaConfig, type LogEntry } from 'kafkajs';
import type { RuntimeConfig } from './config.ts';
import type { Logger } from './log.ts';

/** Builds a kafkajs client from the runtime configuration; kafkajs' own logs go through `logger` as JSON lines. */
export function createKafka(config: RuntimeConfig, clientId: string, logger: Logger): Kafka {
  const options: KafkaConfig = {
    clientId,
    brokers: config.kafka.brokers,
    ssl: config.kafka.ssl,
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log }: LogEntry) => {
      // kafkajs logs connection churn at ERROR while it retries; it is noise unless it persists.
      const fields = { component: `kafkajs.${namespace}`, broker: log.broker, error: log.error };
      if (level <= logLevel.ERROR) logger.warn(log.message, fields);
      else logger.debug(log.message, fields);
    },
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5000 },
  };
  if (config.kafka.sasl) options.sasl = config.kafka.sasl as KafkaConfig['sasl'];
  return new Kafka(options);
}

/** Local infrastructure (`tao infra`, `tao model`) and how the tests and `bin/tao.js` start. Part of the one declaration of settings (runtime/config.ts, `SETTINGS`). */
import { PACKAGE_PATH, type SettingSpec } from './spec.ts';

export const LOCAL_SETTINGS = {
  // Local infra
  TAO_INFRA: {
    kind: 'enum',
    values: ['local', 'docker'],
    meaning: 'how npm test starts Kafka and a registry when KAFKA_BROKERS is unset: local (infra/, the default) or docker (testcontainers)',
    usedBy: ['test'],
  },
  TAO_RUN_FROM: {
    kind: 'enum',
    values: ['dist', 'source'],
    defaultNote: 'dist/ when built and current, else the sources through tsx',
    meaning: 'what bin/tao.js runs: the compiled build or the TypeScript sources',
    usedBy: ['all'],
  },
  TAO_INFRA_DIR: { kind: 'string', defaultNote: `.infra ${PACKAGE_PATH}`, meaning: 'cache, data, logs and pid files of `tao infra`', usedBy: ['infra'] },
  TAO_KAFKA_PORT: { kind: 'port', default: '9092', min: 1, max: 65535, meaning: "local broker's listener", usedBy: ['infra'] },
  TAO_CONTROLLER_PORT: { kind: 'port', default: '9093', min: 1, max: 65535, meaning: "local broker's KRaft controller listener", usedBy: ['infra'] },
  TAO_REGISTRY_PORT: { kind: 'port', default: '8081', min: 1, max: 65535, meaning: "local schema registry's port", usedBy: ['infra'] },
  TAO_MODEL_PORT: {
    kind: 'port',
    default: '8091',
    min: 1,
    max: 65535,
    meaning: "port of the local model server (`tao model up`: llama.cpp's llama-server, OpenAI-compatible at http://127.0.0.1:<port>/v1)",
    usedBy: ['infra'],
  },
  TAO_MODEL_NAME: {
    kind: 'enum',
    // infra/model/models.ts, LOCAL_MODELS (a unit test keeps the two lists equal).
    values: ['qwen2.5-coder-1.5b', 'qwen2.5-coder-0.5b', 'smollm2-135m'],
    default: 'qwen2.5-coder-1.5b',
    meaning:
      '`tao model up`: which model the local model server serves (`--model` overrides it); the 0.5B is the fast one for tests, SmolLM2 a smoke model that cannot call tools',
    usedBy: ['infra'],
  },
  TAO_MODEL_CACHE: {
    kind: 'string',
    defaultNote: '$XDG_CACHE_HOME/tao-kafka, else ~/.cache/tao-kafka',
    meaning: '`tao model`: where llama-server is built (once, about 7 min) and the model files are kept, outside the clone so that every clone shares them',
    usedBy: ['infra'],
  },
} as const satisfies Record<string, SettingSpec>;

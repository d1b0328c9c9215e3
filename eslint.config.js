// Lint: typescript-eslint's recommended rules over the whole tree, and the layers of
// scripts/layers.js as import boundaries (a module may not import its peers, the layers above it, or
// the repository's tools). `npm run lint` runs it; `npm test` runs it first.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { LAYERS, forbiddenFor } from './scripts/layers.js';

const boundaries = LAYERS.flat().map((part) => ({
  files: part === 'processors' ? ['processors/*.ts'] : [`${part}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: forbiddenFor(part).map((other) => ({
          group: [
            `**/${other}/**`,
            ...(other === 'processors' ? ['**/processors/*.ts'] : []),
            // Inside processors/, a stage reaches a peer as ../<peer>/ and the shared files reach a stage as ./<stage>/.
            ...(other.startsWith('processors/') && part.startsWith('processors/') ? [`../${other.slice('processors/'.length)}/**`] : []),
            ...(other.startsWith('processors/') && part === 'processors' ? [`./${other.slice('processors/'.length)}/**`] : []),
          ],
          message: `${part}/ may not import ${other}/ (the layers: scripts/layers.js, docs/ARCHITECTURE.md)`,
        })),
      },
    ],
  },
}));

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.infra/', 'deploy/helm/', 'models/**/*.py', '**/*.gen.ts', 'patches/kafkajs/', 'console/static/vendor/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        fetch: 'readonly',
        AbortSignal: 'readonly',
        AbortController: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
        NodeJS: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // prom-client's collect() callbacks get the metric as `this`; the owner is reached as `self`.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['self'] }],
    },
  },
  // The console's page script runs in the browser.
  {
    files: ['console/static/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        document: 'readonly',
        location: 'readonly',
        history: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
        URLSearchParams: 'readonly',
        setTimeout: 'readonly',
        uPlot: 'readonly',
      },
    },
  },
  // Tests take apart documents they did not type (Kubernetes manifests, tool catalogs).
  { files: ['test/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
  ...boundaries,
);

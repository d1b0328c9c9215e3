// The product's layers, bottom first: a module imports from its own part of the tree and from lower
// layers only, and parts of one layer do not import each other. Under processors/, each folder is a
// part of its own and the files at its top are the stages' shared vocabulary. Read by
// test/architecture/layers.test.ts (which checks every import) and eslint.config.js (which flags a
// wrong one in the editor); docs/ARCHITECTURE.md ("Layers") explains them.

/** @type {readonly (readonly string[])[]} */
export const LAYERS = [
  ['schemas', 'topics'],
  ['runtime'],
  ['tools', 'client', 'features'],
  ['processors', 'processors/guardrails'],
  ['processors/thought', 'processors/action', 'processors/observation'],
  ['processors/wiring'],
  ['observability', 'callbacks', 'ingress', 'scheduler', 'model-sim', 'tool-server', 'infra', 'eval'],
  ['replay'],
  ['console'],
  ['cli'],
];

/** The repository's tools: they may import anything, and no product module imports them. */
export const TOOLS = ['bench', 'deploy', 'models', 'scripts', 'test'];

/** The part of the tree a path (relative to the repository root, `/`-separated) belongs to. */
export function partOf(path) {
  const [top, second, ...rest] = path.split('/');
  if (top === 'processors' && rest.length > 0) return `processors/${second}`;
  return second === undefined ? '.' : top;
}

/** The parts a module of `part` must not import: its peers and everything above, and the tools. */
export function forbiddenFor(part) {
  const at = LAYERS.findIndex((parts) => parts.includes(part));
  if (at < 0) return [];
  return [
    ...LAYERS.slice(at)
      .flat()
      .filter((p) => p !== part),
    ...TOOLS,
  ];
}

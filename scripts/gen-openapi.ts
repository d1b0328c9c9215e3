/**
 * Writes the OpenAPI documents of the ingress and the console, made from their route tables
 * (ingress/routes.ts, console/routes.ts), to docs/openapi/ingress.json and docs/openapi/console.json.
 * Each server serves the same document at `GET /openapi.json`.
 *
 *   npm run docs:openapi            # rewrite the files
 *   npm run docs:openapi -- --check # exit 1 if a file is stale (test/runtime/openapi.test.ts checks it too)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { consoleOpenApi } from '../console/routes.ts';
import { ingressOpenApi } from '../ingress/routes.ts';

/** Each generated file and its content (pretty JSON, one trailing newline). */
export function openApiFiles(): Array<{ file: string; text: string }> {
  const text = (doc: unknown) => `${JSON.stringify(doc, null, 2)}\n`;
  return [
    { file: fileURLToPath(new URL('../docs/openapi/ingress.json', import.meta.url)), text: text(ingressOpenApi()) },
    { file: fileURLToPath(new URL('../docs/openapi/console.json', import.meta.url)), text: text(consoleOpenApi()) },
  ];
}

const read = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const stale = openApiFiles().filter(({ file, text }) => read(file) !== text);
  if (process.argv.includes('--check')) {
    for (const { file } of stale) console.error(`${file} is stale: run \`npm run docs:openapi\``);
    process.exit(stale.length ? 1 : 0);
  }
  for (const { file, text } of stale) {
    mkdirSync(fileURLToPath(new URL('../docs/openapi/', import.meta.url)), { recursive: true });
    writeFileSync(file, text);
    console.log(`${file} written`);
  }
}

import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CATALOG_DIR } from '../../tools/catalog.ts';

/**
 * A copy of the shipped tool catalog in a fresh temp folder (for TAO_TOOL_CATALOG_DIR), each tool
 * spec passed through `edit` first (change it in place); returns the folder.
 */
export function catalogCopy(prefix: string, edit: (spec: Record<string, unknown>) => void): string {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  for (const file of readdirSync(DEFAULT_CATALOG_DIR).filter((f) => f.endsWith('.json'))) {
    const spec = JSON.parse(readFileSync(join(DEFAULT_CATALOG_DIR, file), 'utf8')) as Record<string, unknown>;
    edit(spec);
    writeFileSync(join(dir, file), JSON.stringify(spec));
  }
  return dir;
}

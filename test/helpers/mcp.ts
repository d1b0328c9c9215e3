/**
 * MCP tools for loop tests: a catalog folder holding the shipped demo catalog, except that the tools
 * a real MCP server serves (tool-server/mcp-server.ts) are replaced by the entries `tao tools
 * import-mcp` writes for them, run as the CLI (a process of its own, the way an operator runs it).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { DEFAULT_CATALOG_DIR } from '../../tools/catalog.ts';

/** The folder, and what the import printed. */
export async function mcpCatalog(mcpUrl: string, served: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ dir: string; printed: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tao-mcp-loop-catalog-'));
  for (const file of readdirSync(DEFAULT_CATALOG_DIR).filter((f) => f.endsWith('.json'))) {
    if (!served.includes(file.replace(/\.json$/, ''))) copyFileSync(join(DEFAULT_CATALOG_DIR, file), join(dir, file));
  }
  const { stdout } = await promisify(execFile)(process.execPath, [TAO_BIN, 'tools', 'import-mcp', mcpUrl, '--out', dir], { env, timeout: 60000 });
  return { dir, printed: stdout };
}

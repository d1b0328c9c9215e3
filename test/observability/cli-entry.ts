/**
 * Runs `tail` or `status` as its own process for the tests, the way `tao tail|status` will once
 * cli/main.ts wires observability/cli.ts: `node --import tsx test/observability/cli-entry.ts status --json`.
 */
import { statusCommand, tailCommand } from '../../observability/cli.ts';

const [command, ...args] = process.argv.slice(2);
const code = command === 'tail' ? await tailCommand(args) : command === 'status' ? await statusCommand(args) : 2;
process.exit(code);

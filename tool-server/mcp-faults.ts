/**
 * Faults of the demo MCP server (tool-server/mcp-server.ts): the fault specs, and the registry
 * that decides which call gets which fault (the first matching fault, in the order set, that has
 * calls left).
 *
 * @module
 */

/**
 * A fault of the MCP server:
 * - `rpc_error` — the call is answered with a JSON-RPC error (`code`, default -32603 internal error);
 * - `http_error` — the endpoint answers the call's POST with HTTP `status` (default 503), no JSON-RPC;
 * - `tool_error` — a result with `isError: true` and the text "simulated failure of <tool>";
 * - `timeout` — no answer (held until the client cancels or the server closes); with `delayMs`,
 *   held that long and then answered normally;
 * - `large` — the normal answer, its structured content padded with a `history` array to at least
 *   `bytes` characters (default 300000).
 */
export type McpFaultMode = 'rpc_error' | 'http_error' | 'tool_error' | 'timeout' | 'large';
export const MCP_FAULT_MODES: readonly McpFaultMode[] = ['rpc_error', 'http_error', 'tool_error', 'timeout', 'large'];

export interface McpFaultSpec {
  mode: McpFaultMode;
  /** Only calls of this tool; default every tool. */
  tool?: string;
  /** Only the next N matching calls; default unlimited. */
  times?: number;
  status?: number;
  code?: number;
  delayMs?: number;
  bytes?: number;
}

export interface McpFaultState {
  id: string;
  spec: McpFaultSpec;
  applied: number;
}

/** The faults set on one server, in the order set. */
export class McpFaults {
  private faults: McpFaultState[] = [];
  private seq = 0;

  /** `hasTool`: whether the server serves a tool of that name (a fault for another is refused). */
  constructor(private readonly hasTool: (name: string) => boolean) {}

  /** Adds a fault and returns its id; a RangeError for an unknown mode or tool. */
  set(spec: McpFaultSpec): string {
    if (!spec || !MCP_FAULT_MODES.includes(spec.mode)) throw new RangeError(`mode must be one of ${MCP_FAULT_MODES.join(', ')}`);
    if (spec.tool !== undefined && !this.hasTool(spec.tool)) throw new RangeError(`no tool named ${spec.tool}`);
    const id = `f${++this.seq}`;
    this.faults.push({ id, spec: { ...spec }, applied: 0 });
    return id;
  }

  /** The fault a call of `tool` gets among `modes` (counted as applied), or null. */
  choose(tool: string, modes: readonly McpFaultMode[]): McpFaultSpec | null {
    for (const f of this.faults) {
      if (!modes.includes(f.spec.mode) || (f.spec.tool !== undefined && f.spec.tool !== tool)) continue;
      if (f.spec.times !== undefined && f.applied >= f.spec.times) continue;
      f.applied++;
      return f.spec;
    }
    return null;
  }

  clear(): void {
    this.faults = [];
  }

  /** A copy of the faults set, with how often each was applied. */
  list(): McpFaultState[] {
    return this.faults.map((f) => ({ ...f, spec: { ...f.spec } }));
  }
}

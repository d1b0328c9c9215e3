/** The three stages and their default ops ports: what the CLI needs to know of them without loading them. */
export const STAGES = ['thought', 'action', 'observation'] as const;
export type StageName = (typeof STAGES)[number];

/** Default ports of each process's /health and /metrics server (override with TAO_OPS_PORT). */
export const DEFAULT_OPS_PORTS: Record<StageName, number> = { thought: 9401, action: 9402, observation: 9403 };

/**
 * Summaries of V8 `.cpuprofile` files (as written by `node --cpu-prof`): self and total time per
 * function, and self time per origin (our code, a dependency, Node internals, GC, idle). Pure.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The parts of a V8 CPU profile this module reads. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a function lives. */
export type Origin = 'ours' | 'dependency' | 'node' | 'gc' | 'idle' | 'program';

/** One function's share of a profile. */
export interface FunctionCost {
  /** `name (file:line)`; the file relative to the repository root or `node_modules/<package>`. */
  frame: string;
  origin: Origin;
  /** The dependency's package for `dependency` frames. */
  pkg: string | null;
  selfMs: number;
  totalMs: number;
  selfPct: number;
  totalPct: number;
}

/** A profile's totals and its costliest functions. */
export interface ProfileSummary {
  /** Sampled wall time (ms), idle included. */
  wallMs: number;
  /** Sampled time not idle (ms). */
  busyMs: number;
  /** Self time per origin (ms). */
  byOrigin: Record<Origin, number>;
  /** Self time per dependency package (ms). */
  byPackage: Record<string, number>;
  /** Every function, costliest self time first. */
  functions: FunctionCost[];
}

/** Classifies a call frame by its URL. */
export function originOf(frame: CallFrame, repoRoot: string): { origin: Origin; pkg: string | null; file: string } {
  const name = frame.functionName;
  if (name === '(idle)') return { origin: 'idle', pkg: null, file: '' };
  if (name === '(garbage collector)') return { origin: 'gc', pkg: null, file: '' };
  if (name === '(program)' || name === '(root)') return { origin: 'program', pkg: null, file: '' };
  const url = frame.url.replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length);
    const parts = rest.split('/');
    const pkg = parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
    return { origin: 'dependency', pkg, file: `node_modules/${rest}` };
  }
  if (url.startsWith(repoRoot)) return { origin: 'ours', pkg: null, file: url.slice(repoRoot.length) };
  return { origin: 'node', pkg: null, file: url || '(native)' };
}

/** Self and total time per function of one profile. `repoRoot` ends with a slash. */
export function summarizeProfile(profile: CpuProfile, repoRoot: string): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const info = new Map<number, { frame: string; origin: Origin; pkg: string | null }>();
  for (const n of profile.nodes) {
    const o = originOf(n.callFrame, repoRoot);
    const fn = n.callFrame.functionName || '(anonymous)';
    info.set(n.id, { frame: o.file ? `${fn} (${o.file}:${n.callFrame.lineNumber + 1})` : fn, origin: o.origin, pkg: o.pkg });
  }
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const byOrigin: Record<Origin, number> = { ours: 0, dependency: 0, node: 0, gc: 0, idle: 0, program: 0 };
  const byPackage: Record<string, number> = {};
  const meta = new Map<string, { origin: Origin; pkg: string | null }>();
  let wall = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i]!;
    const leaf = info.get(id);
    if (!leaf) continue;
    wall += us;
    self.set(leaf.frame, (self.get(leaf.frame) ?? 0) + us);
    meta.set(leaf.frame, leaf);
    byOrigin[leaf.origin] += us;
    if (leaf.pkg) byPackage[leaf.pkg] = (byPackage[leaf.pkg] ?? 0) + us;
    const onStack = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = info.get(cur);
      if (!f || onStack.has(f.frame) || !byId.has(cur)) continue;
      onStack.add(f.frame);
      meta.set(f.frame, f);
      total.set(f.frame, (total.get(f.frame) ?? 0) + us);
    }
  }
  const busy = wall - byOrigin.idle;
  const ms = (us: number) => us / 1000;
  const functions: FunctionCost[] = [...total.keys()].map((frame) => {
    const m = meta.get(frame)!;
    const s = self.get(frame) ?? 0;
    const t = total.get(frame) ?? 0;
    return {
      frame,
      origin: m.origin,
      pkg: m.pkg,
      selfMs: ms(s),
      totalMs: ms(t),
      selfPct: busy > 0 ? (100 * s) / busy : 0,
      totalPct: busy > 0 ? (100 * t) / busy : 0,
    };
  });
  functions.sort((a, b) => b.selfMs - a.selfMs);
  return {
    wallMs: ms(wall),
    busyMs: ms(busy),
    byOrigin: Object.fromEntries(Object.entries(byOrigin).map(([k, v]) => [k, ms(v)])) as Record<Origin, number>,
    byPackage: Object.fromEntries(
      Object.entries(byPackage)
        .map(([k, v]) => [k, ms(v)])
        .sort((a, b) => (b[1] as number) - (a[1] as number)),
    ),
    functions,
  };
}

/**
 * Summaries of V8 sampling heap profiles (`.heapprofile`, as bench/lib/alloc-sampler.mjs writes
 * them with freed objects kept): bytes allocated per function, per origin and per dependency
 * package, and per nearest function of ours up the stack (so that what a dependency or Node
 * allocates on our behalf is charged to our call that asked for it). Pure.
 */
import { originOf, type Origin } from './cpuprofile.ts';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** The parts of a sampling heap profile this module reads. */
export interface HeapProfile {
  head: HeapNode;
}

/** A profile's allocations, largest first in each list. */
export interface AllocationSummary {
  /** Bytes allocated over the profile (V8's estimate from its samples). */
  totalBytes: number;
  byOrigin: Record<Origin, number>;
  byPackage: Record<string, number>;
  /** Bytes per function (`name (file:line)`), allocated by that function itself. */
  self: Array<{ frame: string; origin: Origin; pkg: string | null; bytes: number }>;
  /** Bytes per function of ours, with what its callees outside our code allocated. */
  ours: Array<{ frame: string; bytes: number }>;
}

export function summarizeHeapProfile(profile: HeapProfile, repoRoot: string): AllocationSummary {
  const byOrigin: Record<Origin, number> = { ours: 0, dependency: 0, node: 0, gc: 0, idle: 0, program: 0 };
  const byPackage: Record<string, number> = {};
  const self = new Map<string, { frame: string; origin: Origin; pkg: string | null; bytes: number }>();
  const ours = new Map<string, number>();
  let total = 0;
  // Iterative walk: a deep stack must not overflow this process's own.
  const stack: Array<{ node: HeapNode; own: string | null }> = [{ node: profile.head, own: null }];
  while (stack.length > 0) {
    const { node, own } = stack.pop()!;
    const o = originOf(node.callFrame, repoRoot);
    const fn = node.callFrame.functionName || '(anonymous)';
    const frame = o.file ? `${fn} (${o.file}:${node.callFrame.lineNumber + 1})` : fn;
    const nearest = o.origin === 'ours' ? frame : own;
    const bytes = node.selfSize;
    if (bytes > 0) {
      total += bytes;
      byOrigin[o.origin] += bytes;
      if (o.pkg) byPackage[o.pkg] = (byPackage[o.pkg] ?? 0) + bytes;
      const entry = self.get(frame) ?? { frame, origin: o.origin, pkg: o.pkg, bytes: 0 };
      entry.bytes += bytes;
      self.set(frame, entry);
      if (nearest !== null) ours.set(nearest, (ours.get(nearest) ?? 0) + bytes);
    }
    for (const child of node.children) stack.push({ node: child, own: nearest });
  }
  return {
    totalBytes: total,
    byOrigin,
    byPackage: Object.fromEntries(Object.entries(byPackage).sort((a, b) => b[1] - a[1])),
    self: [...self.values()].sort((a, b) => b.bytes - a.bytes),
    ours: [...ours].map(([frame, bytes]) => ({ frame, bytes })).sort((a, b) => b.bytes - a.bytes),
  };
}

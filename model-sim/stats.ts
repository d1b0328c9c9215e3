/**
 * Request accounting: what became of each chat-completions request ({@link RecordedRequest}), the
 * counts by skill, outcome, fault and refusing rule, and the most recent records
 * ({@link RequestStats}, served by `GET /__control/stats`).
 */
import type { FaultKind } from './faults.ts';
import type { ProfileName, ProfileQuirk, RuleName } from './profiles.ts';

/** How many request records stats keep. */
export const MAX_RECORDED_REQUESTS = 10_000;

/** What became of a chat-completions request. */
export type Outcome = 'tool_calls' | 'content' | 'json' | 'no_rule' | 'fault' | 'invalid_request' | 'unauthorized';

/** One counted chat-completions request. */
export interface RecordedRequest {
  /** Arrival, ms since the epoch. */
  at: number;
  /** Skill named by the `Skill:` line; `(none)` without one, `(unread)` when the request could not be read. */
  skill: string;
  /** Model turn (1 + assistant messages so far); 0 when the request could not be read. */
  turn: number;
  /** `Turn:` line (e.g. `reflection`), or `null`. */
  turnKind: string | null;
  /** Scenario that answered (`null` when none was consulted). */
  scenario: string | null;
  /** Rule that answered (`null` when none applied). */
  rule: string | null;
  outcome: Outcome;
  fault: FaultKind | null;
  /** Control fault id, `marker` for a `[sim:...]` marker, or `null`. */
  faultId: string | null;
  /** HTTP status sent (`null` while a `timeout` holds the request). */
  status: number | null;
  /** The simulator's profile. */
  profile: ProfileName;
  /** The profile rule that refused the request (model-sim/profiles.ts `RULES`), or `null`. */
  refused: RuleName | null;
  /** Profile quirks applied to the answer (`prefill`, `parallel_tool_calls_trimmed`, `context_truncated`). */
  quirks: ProfileQuirk[];
  /** llamacpp: the trailing assistant text the answer continued (the request ended with an assistant message); else `null`. */
  prefill: string | null;
}

/** Request accounting, as returned by `GET /__control/stats`. */
export interface ModelSimStats {
  /** Chat-completions requests received. */
  total: number;
  bySkill: Record<string, number>;
  byOutcome: Record<string, number>;
  byFault: Record<string, number>;
  /** Refused requests per profile rule. */
  byRefused: Record<string, number>;
  /** The simulator's profile. */
  profile: ProfileName;
  /** The most recent {@link MAX_RECORDED_REQUESTS} requests, oldest first. */
  requests: RecordedRequest[];
}

/** The counters behind {@link ModelSimStats}; one per simulator. */
export class RequestStats {
  private total = 0;
  private bySkill: Record<string, number> = {};
  private byOutcome: Record<string, number> = {};
  private byFault: Record<string, number> = {};
  private byRefused: Record<string, number> = {};
  private records: RecordedRequest[] = [];

  constructor(private readonly profile: ProfileName) {}

  /** Forgets every count and record. */
  reset(): void {
    this.total = 0;
    this.bySkill = {};
    this.byOutcome = {};
    this.byFault = {};
    this.byRefused = {};
    this.records = [];
  }

  /** Counts one request; keeps its record (the most recent {@link MAX_RECORDED_REQUESTS}). */
  count(rec: RecordedRequest): void {
    this.total += 1;
    this.bySkill[rec.skill] = (this.bySkill[rec.skill] ?? 0) + 1;
    this.byOutcome[rec.outcome] = (this.byOutcome[rec.outcome] ?? 0) + 1;
    if (rec.fault !== null) this.byFault[rec.fault] = (this.byFault[rec.fault] ?? 0) + 1;
    if (rec.refused !== null) this.byRefused[rec.refused] = (this.byRefused[rec.refused] ?? 0) + 1;
    this.records.push(rec);
    if (this.records.length > MAX_RECORDED_REQUESTS) this.records.splice(0, this.records.length - MAX_RECORDED_REQUESTS);
  }

  /** A copy of the counts and records. */
  snapshot(): ModelSimStats {
    return {
      total: this.total,
      bySkill: { ...this.bySkill },
      byOutcome: { ...this.byOutcome },
      byFault: { ...this.byFault },
      byRefused: { ...this.byRefused },
      profile: this.profile,
      requests: this.records.map((r) => ({ ...r, quirks: [...r.quirks] })),
    };
  }
}

/**
 * Webhook sources of the ingress: how each one is authenticated, and how its events map to tasks.
 *
 * | source | path | signature | replay protection | handled events |
 * |---|---|---|---|---|
 * | github | POST /v1/webhooks/github | `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(raw body)>` | delivery id (`X-GitHub-Delivery`) remembered for a window, plus a maximum age of the event's own signed timestamp | `issues`/`opened` → NEW, `issue_comment`/`created` → REPLY |
 * | jira | POST /v1/webhooks/jira | `X-Tao-Signature: t=<unix s>,v1=<hex HMAC-SHA256("<t>.<raw body>")>` | signed timestamp within ±tolerance, plus the delivery id (`X-Atlassian-Webhook-Identifier`, else the signature itself) remembered for a window | `jira:issue_created` → NEW, `comment_created` → REPLY |
 *
 * Every event of one ticket maps to `thoughtIdFor(source, externalId)` — `<owner>/<repo>#<number>`
 * for GitHub, the issue key for Jira — so redeliveries and comments reach the same run. Events not
 * in the table are ignored (nothing written), and so are comments on pull requests (GitHub sends
 * them as `issue_comment` too) and comments written by bots (GitHub) or by configured accounts
 * (Jira): those are usually the agent's own answers, and turning them into replies would loop.
 *
 * GitHub signs no timestamp, so a captured request could be replayed. The ingress narrows that
 * twice: a delivery id written in the last `deliveryWindowMs` (default 1 h, in memory, bounded) is
 * answered as a duplicate and not written again, and an event whose own signed time is older than
 * `maxEventAgeMs` (default 7 days) is refused. A replay between the two lands on the same
 * thought_id as the original.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Ajv, type ErrorObject } from 'ajv';
import { thoughtIdFor, type NewTask } from '../client/tasks.ts';

import { TAO_SIGNATURE_HEADER, verifyGithub, verifyTao, type SignatureCheck } from '../runtime/signature.ts';

export const WEBHOOK_SOURCES = ['github', 'jira'] as const;
export type WebhookSource = (typeof WEBHOOK_SOURCES)[number];

/** Environment variable holding each source's shared secret. */
export const WEBHOOK_SECRET_ENV: Readonly<Record<WebhookSource, 'TAO_WEBHOOK_SECRET_GITHUB' | 'TAO_WEBHOOK_SECRET_JIRA'>> = {
  github: 'TAO_WEBHOOK_SECRET_GITHUB',
  jira: 'TAO_WEBHOOK_SECRET_JIRA',
};

/** Longest task text taken from a ticket; longer text is cut and flagged in metadata `text_truncated`. */
export const MAX_WEBHOOK_TEXT_CHARS = 20000;

export interface WebhookOptions {
  /** Shared secret per source. A source without one is refused (401), never accepted unsigned. */
  secrets: Partial<Record<WebhookSource, string>>;
  /** Jira: accepted distance between the signed timestamp and now, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** How long a written delivery id is remembered (duplicates inside it write nothing). Default 1 hour. */
  deliveryWindowMs?: number;
  /** Most delivery ids remembered; the oldest are forgotten first. Default 100000. */
  maxRememberedDeliveries?: number;
  /**
   * GitHub: refuse events whose own timestamp (`issue.created_at` / `comment.created_at`, inside
   * the signed body) is older than this. Bounds replays of a captured request beyond the delivery
   * window. Default 7 days, GitHub's longest redelivery horizon, so the "Redeliver" button keeps working.
   */
  maxEventAgeMs?: number;
  /** Jira: comments by these accountIds are ignored (the agent's own account). */
  jiraIgnoreAccountIds?: readonly string[];
}

export interface FieldError {
  field: string;
  message: string;
}

/** What a verified, parsed webhook asks for. */
export type WebhookDecision =
  | {
      kind: 'task';
      /** Ready for `buildTask`: `thought_id` and `kind` are always set. */
      task: NewTask & { thought_id: string; kind: 'NEW' | 'REPLY' };
      /** Key under which the delivery is remembered against duplicates. */
      deliveryKey: string;
      /** The event's own (signed) time, when the source has one we check. */
      eventAtMs: number | null;
    }
  | { kind: 'ignored'; reason: string }
  | { kind: 'invalid'; message: string; fields: FieldError[] };

export interface WebhookSourceHandler {
  source: WebhookSource;
  /** Checks the request's signature over the raw body. */
  verify(headers: IncomingHttpHeaders, body: Buffer, secret: string, nowMs: number): SignatureCheck;
  /** Maps the parsed body of a verified request to a decision. */
  interpret(headers: IncomingHttpHeaders, payload: unknown, signature: Extract<SignatureCheck, { ok: true }>): WebhookDecision;
}

/** Ajv errors as `{field, message}`, `field` being the slash path of the offending property. */
export function fieldErrors(errors: ErrorObject[] | null | undefined, prefix = ''): FieldError[] {
  return (errors ?? []).map((e) => {
    const params = e.params as { missingProperty?: string; additionalProperty?: string };
    const path = [prefix, e.instancePath.replace(/^\//, ''), params.missingProperty ?? params.additionalProperty].filter(Boolean).join('/');
    return { field: path || '/', message: e.message ?? 'is invalid' };
  });
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function clip(text: string, metadata: Record<string, string>): string {
  if (text.length <= MAX_WEBHOOK_TEXT_CHARS) return text;
  metadata.text_truncated = 'true';
  return text.slice(0, MAX_WEBHOOK_TEXT_CHARS);
}

/** Only the properties we read are checked; everything else in the payload is left alone. */
const user = { type: 'object', properties: { login: { type: 'string' }, type: { type: 'string' } } } as const;
const repository = { type: 'object', required: ['full_name'], properties: { full_name: { type: 'string', pattern: '^[^/\\s]+/[^/\\s]+$' } } } as const;
const timestamp = { type: 'string', minLength: 10 } as const;

const githubIssueOpened = {
  type: 'object',
  required: ['action', 'issue', 'repository'],
  properties: {
    action: { type: 'string' },
    issue: {
      type: 'object',
      required: ['number', 'title', 'created_at'],
      properties: {
        number: { type: 'integer', minimum: 1 },
        title: { type: 'string', minLength: 1 },
        body: { type: ['string', 'null'] },
        html_url: { type: 'string' },
        created_at: timestamp,
        user,
      },
    },
    repository,
  },
} as const;

const githubCommentCreated = {
  type: 'object',
  required: ['action', 'issue', 'comment', 'repository'],
  properties: {
    action: { type: 'string' },
    issue: { type: 'object', required: ['number'], properties: { number: { type: 'integer', minimum: 1 }, pull_request: { type: 'object' } } },
    comment: {
      type: 'object',
      required: ['id', 'body', 'created_at'],
      properties: { id: { type: 'integer' }, body: { type: 'string', minLength: 1 }, html_url: { type: 'string' }, created_at: timestamp, user },
    },
    repository,
    sender: user,
  },
} as const;

interface GithubUser {
  login?: string;
  type?: string;
}
interface GithubIssueOpened {
  action: string;
  issue: { number: number; title: string; body?: string | null; html_url?: string; created_at: string; user?: GithubUser };
  repository: { full_name: string };
}
interface GithubCommentCreated {
  action: string;
  issue: { number: number; pull_request?: object };
  comment: { id: number; body: string; html_url?: string; created_at: string; user?: GithubUser };
  repository: { full_name: string };
  sender?: GithubUser;
}

const jiraKey = { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]*-[0-9]+$' } as const;
const jiraText = { anyOf: [{ type: 'string' }, { type: 'null' }, { type: 'object' }] } as const;

const jiraIssueCreated = {
  type: 'object',
  required: ['webhookEvent', 'issue'],
  properties: {
    webhookEvent: { type: 'string' },
    timestamp: { type: 'integer' },
    issue: {
      type: 'object',
      required: ['key', 'fields'],
      properties: {
        id: { type: 'string' },
        key: jiraKey,
        fields: { type: 'object', required: ['summary'], properties: { summary: { type: 'string', minLength: 1 }, description: jiraText } },
      },
    },
  },
} as const;

const jiraCommentCreated = {
  type: 'object',
  required: ['webhookEvent', 'issue', 'comment'],
  properties: {
    webhookEvent: { type: 'string' },
    timestamp: { type: 'integer' },
    issue: { type: 'object', required: ['key'], properties: { key: jiraKey } },
    comment: {
      type: 'object',
      required: ['id', 'body'],
      properties: {
        id: { type: 'string', minLength: 1 },
        body: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'object' }] },
        author: { type: 'object', properties: { accountId: { type: 'string' } } },
      },
    },
  },
} as const;

interface JiraIssueCreated {
  webhookEvent: string;
  timestamp?: number;
  issue: { id?: string; key: string; fields: { summary: string; description?: unknown } };
}
interface JiraCommentCreated {
  webhookEvent: string;
  timestamp?: number;
  issue: { key: string };
  comment: { id: string; body: unknown; author?: { accountId?: string } };
}

const BLOCK_NODES = new Set(['paragraph', 'heading', 'blockquote', 'codeBlock', 'listItem', 'rule', 'panel', 'tableRow']);

/**
 * Plain text of a Jira rich-text value: a string (REST v2 / wiki markup) as is, an Atlassian
 * Document Format tree (REST v3) flattened to its text nodes, one line per block.
 */
export function jiraPlainText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (!value || typeof value !== 'object') return '';
  const node = value as { type?: string; text?: unknown; content?: unknown };
  let out = typeof node.text === 'string' ? node.text : '';
  if (node.type === 'hardBreak') out += '\n';
  if (Array.isArray(node.content)) out += node.content.map(jiraPlainText).join('');
  if (node.type && BLOCK_NODES.has(node.type)) out += '\n';
  return node.type === 'doc' ? out.trim() : out;
}

/** The webhook sources, configured with `options`. */
export function webhookHandlers(options: WebhookOptions): Record<WebhookSource, WebhookSourceHandler> {
  const ajv = new Ajv({ allErrors: true });
  const validate = {
    issueOpened: ajv.compile<GithubIssueOpened>(githubIssueOpened),
    commentCreated: ajv.compile<GithubCommentCreated>(githubCommentCreated),
    jiraIssue: ajv.compile<JiraIssueCreated>(jiraIssueCreated),
    jiraComment: ajv.compile<JiraCommentCreated>(jiraCommentCreated),
  };
  const tolerance = options.toleranceSeconds ?? 300;
  const ignoredAccounts = new Set(options.jiraIgnoreAccountIds ?? []);

  const github: WebhookSourceHandler = {
    source: 'github',
    verify: (headers, body, secret) => verifyGithub(header(headers, 'x-hub-signature-256'), body, secret),
    interpret(headers, payload) {
      const event = header(headers, 'x-github-event');
      const delivery = header(headers, 'x-github-delivery');
      const missing: FieldError[] = [];
      if (!event) missing.push({ field: 'header:X-GitHub-Event', message: 'is required' });
      if (!delivery) missing.push({ field: 'header:X-GitHub-Delivery', message: 'is required' });
      if (!event || !delivery) return { kind: 'invalid', message: 'GitHub delivery headers are missing', fields: missing };
      const action = typeof payload === 'object' && payload !== null ? (payload as { action?: unknown }).action : undefined;
      if (event === 'ping') return { kind: 'ignored', reason: 'ping' };
      if (event !== 'issues' && event !== 'issue_comment') return { kind: 'ignored', reason: `event ${event} is not handled` };
      const wanted = event === 'issues' ? 'opened' : 'created';
      if (typeof action === 'string' && action !== wanted) return { kind: 'ignored', reason: `${event} action ${action} is not handled` };
      const metadata: Record<string, string> = { github_event: event, github_action: wanted, github_delivery: delivery };

      if (event === 'issues') {
        if (!validate.issueOpened(payload))
          return { kind: 'invalid', message: 'the issues event has invalid fields', fields: fieldErrors(validate.issueOpened.errors) };
        const { issue, repository: repo } = payload;
        const externalId = `${repo.full_name}#${issue.number}`;
        Object.assign(metadata, { repository: repo.full_name, issue_number: String(issue.number) });
        if (issue.html_url) metadata.issue_url = issue.html_url;
        if (issue.user?.login) metadata.author = issue.user.login;
        const text = clip(issue.body ? `${issue.title}\n\n${issue.body}` : issue.title, metadata);
        return {
          kind: 'task',
          task: { thought_id: thoughtIdFor('github', externalId), kind: 'NEW', text, source: 'github', external_id: externalId, metadata },
          deliveryKey: `github:${delivery}`,
          eventAtMs: Date.parse(issue.created_at),
        };
      }

      if (!validate.commentCreated(payload))
        return { kind: 'invalid', message: 'the issue_comment event has invalid fields', fields: fieldErrors(validate.commentCreated.errors) };
      const { issue, comment, repository: repo, sender } = payload;
      if (sender?.type === 'Bot' || comment.user?.type === 'Bot') return { kind: 'ignored', reason: 'comment written by a bot' };
      // GitHub sends pull-request conversation comments as issue_comment too; no run starts from a PR.
      if (issue.pull_request) return { kind: 'ignored', reason: 'comment on a pull request' };
      const externalId = `${repo.full_name}#${issue.number}`;
      Object.assign(metadata, { repository: repo.full_name, issue_number: String(issue.number), comment_id: String(comment.id) });
      if (comment.html_url) metadata.comment_url = comment.html_url;
      if (comment.user?.login) metadata.author = comment.user.login;
      return {
        kind: 'task',
        task: {
          thought_id: thoughtIdFor('github', externalId),
          kind: 'REPLY',
          text: clip(comment.body, metadata),
          source: 'github',
          external_id: externalId,
          metadata,
        },
        deliveryKey: `github:${delivery}`,
        eventAtMs: Date.parse(comment.created_at),
      };
    },
  };

  const jira: WebhookSourceHandler = {
    source: 'jira',
    verify: (headers, body, secret, nowMs) => verifyTao(header(headers, TAO_SIGNATURE_HEADER), body, secret, tolerance, nowMs),
    interpret(headers, payload, signature) {
      const event = typeof payload === 'object' && payload !== null ? (payload as { webhookEvent?: unknown }).webhookEvent : undefined;
      if (typeof event !== 'string')
        return {
          kind: 'invalid',
          message: 'the Jira event has invalid fields',
          fields: [{ field: 'webhookEvent', message: "must have required property 'webhookEvent'" }],
        };
      if (event !== 'jira:issue_created' && event !== 'comment_created') return { kind: 'ignored', reason: `webhookEvent ${event} is not handled` };
      // Jira keeps X-Atlassian-Webhook-Identifier across its retries; senders without it are
      // de-duplicated on the signature, which is unique per (timestamp, body).
      const delivery = header(headers, 'x-atlassian-webhook-identifier');
      const deliveryKey = delivery ? `jira:${delivery}` : `jira:sig:${signature.digest}`;
      const metadata: Record<string, string> = { jira_event: event };
      if (delivery) metadata.jira_delivery = delivery;

      if (event === 'jira:issue_created') {
        if (!validate.jiraIssue(payload))
          return { kind: 'invalid', message: 'the jira:issue_created event has invalid fields', fields: fieldErrors(validate.jiraIssue.errors) };
        const { issue } = payload;
        metadata.issue_key = issue.key;
        if (issue.id) metadata.issue_id = issue.id;
        const description = jiraPlainText(issue.fields.description).trim();
        const text = clip(description ? `${issue.fields.summary}\n\n${description}` : issue.fields.summary, metadata);
        return {
          kind: 'task',
          task: { thought_id: thoughtIdFor('jira', issue.key), kind: 'NEW', text, source: 'jira', external_id: issue.key, metadata },
          deliveryKey,
          eventAtMs: null,
        };
      }

      if (!validate.jiraComment(payload))
        return { kind: 'invalid', message: 'the comment_created event has invalid fields', fields: fieldErrors(validate.jiraComment.errors) };
      const { issue, comment } = payload;
      const author = comment.author?.accountId;
      if (author && ignoredAccounts.has(author)) return { kind: 'ignored', reason: 'comment written by an ignored account' };
      const body = jiraPlainText(comment.body).trim();
      if (!body)
        return { kind: 'invalid', message: 'the comment_created event has invalid fields', fields: [{ field: 'comment/body', message: 'must contain text' }] };
      Object.assign(metadata, { issue_key: issue.key, comment_id: comment.id });
      if (author) metadata.author_account_id = author;
      return {
        kind: 'task',
        task: { thought_id: thoughtIdFor('jira', issue.key), kind: 'REPLY', text: clip(body, metadata), source: 'jira', external_id: issue.key, metadata },
        deliveryKey,
        eventAtMs: null,
      };
    },
  };

  return { github, jira };
}

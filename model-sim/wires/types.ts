/**
 * A wire of the simulator other than chat completions (`/v1/responses`, `/v1/messages`): how the
 * chat-completions handler (model-sim/chat.ts) checks a request of that API, reads it as a chat
 * request, and sends its answers and errors in that API's shapes.
 */
import type http from 'node:http';
import type { ProfileConfig, Refusal, WireCompletion } from '../profiles.ts';

export interface SimWire {
  name: 'responses' | 'messages';
  /** The wire's refusal of a request under the profile, or null (then {@link toChat} reads it). */
  check(profile: ProfileConfig, body: Record<string, unknown>, headers: http.IncomingHttpHeaders): Refusal | null;
  /** The chat-completions request the wire's request means. */
  toChat(body: Record<string, unknown>): Record<string, unknown>;
  /** The wire's answer for a chat completion, given the wire's request. */
  answer(completion: WireCompletion, body: Record<string, unknown>): unknown;
  /** The wire's error body for an OpenAI-shaped one (`{error: {message, type, ...}}`). */
  error(status: number, body: unknown): unknown;
  /** Whether the request carries the key (the Messages API sends it as `x-api-key`); absent: `Authorization: Bearer`. */
  authorized?(headers: http.IncomingHttpHeaders, key: string): boolean;
}

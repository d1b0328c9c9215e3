/** The ingress's HTTP plumbing: request paths, bodies (size-capped, strict UTF-8 JSON) and Kafka writes within a time limit. */
import type { IncomingMessage } from 'node:http';
import { TaoError, TransientError, errorMessage } from '../runtime/errors.ts';
import type { FieldError } from './webhooks.ts';

/** An HTTP answer: status, JSON body, extra headers. */
export type Reply = { status: number; body: unknown; headers?: Record<string, string> };

/** The request's path; a request-target that is not a URL path gets one that matches no route. */
export function pathOf(url: string | undefined): string {
  try {
    return new URL(url ?? '/', 'http://ingress').pathname;
  } catch {
    return '/?';
  }
}

export function tooLarge(max: number): Reply {
  // The rest of the upload is not read: close the connection instead of draining it.
  return { status: 413, headers: { connection: 'close' }, body: { error: 'payload_too_large', message: `body exceeds ${max} bytes` } };
}

/** JSON is UTF-8 (RFC 8259): bytes that are not are refused, never replaced with U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function parseJson(body: Buffer, req: IncomingMessage): { value: unknown } | { error: Reply } {
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    // The decoder's only failure is invalid UTF-8; the answer says so.
    const message = 'body is not valid UTF-8';
    return { error: { status: 400, body: { error: 'invalid_json', message, fields: [{ field: '/', message }] } } };
  }
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    const form = (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    const hint = form ? ' (the sender posts form data: configure it to send application/json)' : '';
    const message = `body is not JSON${hint}: ${errorMessage(err)}`;
    const fields: FieldError[] = [{ field: '/', message }];
    return { error: { status: 400, body: { error: 'invalid_json', message, fields } } };
  }
}

/**
 * Waits for `write` at most `ms`. Failures become {@link TransientError}s (Kafka refused or did not
 * answer in time: the caller may retry).
 */
export async function writeWithin(ms: number, write: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  write.catch(() => undefined); // a late failure after the timeout is already answered
  try {
    await Promise.race([
      write,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TransientError(`Kafka did not acknowledge within ${ms} ms`, { details: { timeoutMs: ms } })), ms);
      }),
    ]);
  } catch (err) {
    throw err instanceof TaoError ? err : new TransientError(`Kafka refused the record: ${errorMessage(err)}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads the body up to `max` bytes. Past the limit it stops reading (the connection is closed
 * after the 413) rather than destroying the request, so the client still gets the answer.
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too_large'> {
  if (Number(req.headers['content-length'] ?? 0) > max) return Promise.resolve('too_large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      done();
      req.pause();
      resolve('too_large');
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onClose = () => {
      done();
      reject(new TransientError('the client closed the connection before the body was complete'));
    };
    req.on('data', onData).once('end', onEnd).once('error', onError).once('close', onClose);
  });
}

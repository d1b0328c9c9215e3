/** The value at an RFC 6901 JSON pointer (`/a/b`, with `~1` for `/` and `~0` for `~`), or undefined. Pure. */
export function valueAt(data: unknown, pointer: string): unknown {
  let current = data;
  for (const part of pointer.split('/').slice(1)) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return current;
}

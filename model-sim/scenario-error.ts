/**
 * What scenario files (scenario-files.ts) and answer templates (templates.ts) share: the default
 * scenario's name, the error naming a file and JSON path, and compiling a regular expression a file
 * writes. Below both, so neither imports the other to reach it.
 */

/** Name of the scenario used for skills that have none (and for requests without a `Skill:` line). */
export const DEFAULT_SCENARIO = 'default';

/** A scenario file is unreadable or breaks the format; the message is one line naming the file and the JSON path. */
export class ScenarioError extends Error {
  readonly file: string;
  readonly path: string;

  constructor(file: string, path: string, message: string) {
    super(`${file}: ${path || '/'}: ${message}`);
    this.name = 'ScenarioError';
    this.file = file;
    this.path = path;
  }
}

/** A file's regular expression, compiled; a bad one is a {@link ScenarioError} naming the file and path. */
export function compileRegex(file: string, path: string, source: string, flags: string): RegExp {
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new ScenarioError(file, path, `invalid regular expression: ${(err as Error).message}`);
  }
}

/**
 * Where `tao eval --from-log`'s candidate comes from: the one place that turns the command's
 * options into the environment the candidate's stages would run with. Today a release folder
 * (runtime/release/folder.ts) laid over the deployment's environment, or the deployment's own
 * configuration without one; a published manifest's digest will resolve here too.
 */
import { releaseEnv } from '../../runtime/release/folder.ts';
import { setting } from '../../runtime/config.ts';
import { ConfigError } from '../../runtime/errors.ts';

/** What the command was told about the candidate. */
export interface CandidateOptions {
  /** A release folder; undefined: the deployment's own configuration is the candidate. */
  release?: string;
  /** The candidate model's endpoint (an OpenAI-compatible base up to /v1); undefined: TAO_LLM_BASE_URL. */
  baseUrl?: string;
  /** The candidate's model; undefined: the release's TAO_LLM_MODEL, else the deployment's. */
  model?: string;
}

/** The candidate, as the stages would run it. */
export interface Candidate {
  /** What to call it in the report: the release folder, or `the deployment's configuration`. */
  label: string;
  /** The environment its Thought, Observation and model tool are built from. */
  env: NodeJS.ProcessEnv;
  /**
   * The model a release or `--model` names explicitly (null: none named): a recorded model answer
   * is reused only when that model gave it; another model's turn is a changed request.
   */
  namedModel: string | null;
  /** Whether a model endpoint is configured to ask when a model turn's request changed. */
  hasModel: boolean;
}

/**
 * The candidate the options name.
 * @throws ConfigError (one line) for a release folder that does not load, or a --base-url that is not http(s).
 */
export function candidateFrom(options: CandidateOptions, env: NodeJS.ProcessEnv): Candidate {
  const release = options.release === undefined ? {} : releaseEnv(options.release);
  const merged: NodeJS.ProcessEnv = { ...env, ...release };
  if (options.baseUrl !== undefined) {
    if (!/^https?:\/\//.test(options.baseUrl)) throw new ConfigError(`--base-url must be an http:// or https:// URL, got "${options.baseUrl}"`);
    merged.TAO_LLM_BASE_URL = options.baseUrl;
  }
  if (options.model !== undefined) merged.TAO_LLM_MODEL = options.model;
  const namedModel = options.model ?? release.TAO_LLM_MODEL ?? null;
  const hasModel = Boolean(setting(merged, 'TAO_LLM_BASE_URL'));
  // Without a model named anywhere, the model tool still gets a name to send: the endpoint's own choice is not ours to guess.
  if (hasModel && !setting(merged, 'TAO_LLM_MODEL'))
    throw new ConfigError('the candidate has a model endpoint (--base-url or TAO_LLM_BASE_URL) but no model: give --model or TAO_LLM_MODEL');
  return { label: options.release ?? "the deployment's configuration", env: merged, namedModel, hasModel };
}

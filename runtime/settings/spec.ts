/** The shape of a setting's declaration (runtime/config.ts's {@link SETTINGS} is made of them), and the patterns several share. */

export type SettingKind = 'string' | 'int' | 'number' | 'bool' | 'enum' | 'port' | 'url' | 'duration' | 'list' | 'secret';

/** Who reads a variable: a process (`tao run <name>`), the CLI commands, local infra, or tests/benchmarks only. */
export type Component =
  'all' | 'thought' | 'action' | 'observation' | 'ingress' | 'callbacks' | 'scheduler' | 'tools' | 'cli' | 'replay' | 'infra' | 'bench' | 'test';

export interface SettingSpec {
  kind: SettingKind;
  /** Default, written as a user would write the value and parsed by the same rule. Absent: optional, no value. */
  default?: string;
  /** Shown in docs instead of `default` when the default is not a value of the variable (a path in the package, a per-process port). */
  defaultNote?: string;
  /** Inclusive bounds: int, number, port; milliseconds for a duration. */
  min?: number;
  max?: number;
  /** Allowed values of an enum, lower case. */
  values?: readonly string[];
  /** Values an enum took once and takes no more, each with what to use instead: setting one is a one-line error that says so. */
  retired?: Readonly<Record<string, string>>;
  /** `string` values and each `list` item must match, described by `hint` in the error. */
  pattern?: RegExp;
  hint?: string;
  /** `list` items that must each be an http(s) URL. */
  urlItems?: boolean;
  meaning: string;
  usedBy: readonly Component[];
}

export const HOST_PORT = /^[^\s:,]+:[0-9]{1,5}$/;
export const PACKAGE_PATH = 'in the package';

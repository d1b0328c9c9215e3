/**
 * Slots: the values a flow needs (order id, invoice number, e-mail, service...), taken from a task's
 * text by per-flow patterns that live in the flow's configuration (`flows/*.json`, `inputs`).
 *
 * Two questions are kept apart:
 * - *Is the value mentioned?* The flow's `pattern` answers it, and it is generous about how customers
 *   write ids: prefixes dropped, purchase-order style ids with letters and suffixes, bare long numbers
 *   after "order" / "订单号", any case, full-width characters.
 * - *Will the tool take it?* The tool's contract (`tools/catalog/*.json`, its parameter schema) answers
 *   it, and it stays exactly what the tool accepts. A value that is mentioned but that a tool would
 *   refuse is not sent: the planner asks for it (see {@link GraphPlanner.instantiate}).
 *
 * Pure: no I/O, same text → same values.
 */
import { ConfigError } from '../../runtime/errors.ts';

/** How one flow input is found in a task text (a flow file's `inputs.<name>`). */
export interface SlotSpec {
  /**
   * A regular expression (JavaScript syntax), matched case-insensitively over the NFKC-normalized text.
   * The value is the named group `value` when the pattern has one, else the whole match. The last match
   * in the text wins, so a reply that corrects a value overrides the original.
   */
  pattern: string;
  description: string;
  /** Case the value is put in after matching (ids are upper case, e-mails and service names lower case). */
  case?: 'upper' | 'lower';
  /**
   * Known variants of the accepted shape, rewritten to it: the first `from` (anchored to the whole value,
   * case-insensitive) that matches replaces the value by `to` (`$1`... are its groups). Applied after `case`.
   */
  rewrite?: Array<{ from: string; to: string }>;
}

/** JSON Schema of {@link SlotSpec}, used by the flow loader. */
export const slotSpecSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['pattern', 'description'],
  properties: {
    pattern: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    case: { enum: ['upper', 'lower'] },
    rewrite: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['from', 'to'],
        properties: { from: { type: 'string', minLength: 1 }, to: { type: 'string' } },
      },
    },
  },
} as const;

/** A flow's inputs with their expressions compiled once. */
export class SlotExtractor {
  private readonly slots: Array<{ name: string; spec: SlotSpec; re: RegExp; rewrite: Array<{ from: RegExp; to: string }> }>;

  /**
   * @param where names the configuration in errors (`flows/order-lookup.v1.json`).
   * @throws ConfigError naming the input when a pattern or a rewrite is not a valid regular expression.
   */
  constructor(inputs: Readonly<Record<string, SlotSpec>>, where: string) {
    const compile = (source: string, flags: string, what: string): RegExp => {
      try {
        return new RegExp(source, flags);
      } catch (err) {
        throw new ConfigError(`${where}: ${what} is not a valid regular expression: ${(err as Error).message}`);
      }
    };
    this.slots = Object.entries(inputs).map(([name, spec]) => ({
      name,
      spec,
      re: compile(spec.pattern, 'gi', `inputs.${name}.pattern`),
      rewrite: (spec.rewrite ?? []).map((r, i) => ({ from: compile(`^(?:${r.from})$`, 'i', `inputs.${name}.rewrite[${i}].from`), to: r.to })),
    }));
  }

  /** The value of every input mentioned in `text` (absent when not mentioned). */
  extract(text: string): Record<string, string> {
    const t = String(text ?? '').normalize('NFKC');
    const values: Record<string, string> = {};
    for (const { name, spec, re, rewrite } of this.slots) {
      let last: string | undefined;
      for (const m of t.matchAll(re)) {
        const raw = m.groups?.['value'] ?? m[0];
        if (raw) last = raw;
      }
      if (last === undefined) continue;
      let value = spec.case === 'upper' ? last.toUpperCase() : spec.case === 'lower' ? last.toLowerCase() : last;
      const rule = rewrite.find((r) => r.from.test(value));
      if (rule) value = value.replace(rule.from, rule.to);
      values[name] = value;
    }
    return values;
  }
}

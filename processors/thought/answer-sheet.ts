/**
 * The verified values a react turn shows last once it offers a final answer (model/prompt.ts), and
 * what the reply should state. Pure and deterministic, from verified results only, so a replay
 * rebuilds the same prompt.
 */
import { STATE_FIELD, type VerifiedResult } from './reading.ts';
import { CHINESE_STATES } from './state-words.ts';

/**
 * The verified values a final answer may state, as a react turn that offers a final answer shows
 * them in its last message (prompt.ts): each tool's latest result, its top-level values written as
 * they must appear (an amount in cents also in currency units, the one form the answer checks accept
 * for money), then what the reply should state: the results' states (`status`, `state`), then the
 * values the skill's answer must state. A small model copies from the message it
 * reads last: the 1.5B wrote "191964 元" for 191964 cents, "in transit" for a `pending` shipment,
 * and left out the incident id, with the results three messages up.
 * For a Chinese ticket a state is also given in the Chinese the checks read (`delivered` as 已送达):
 * the 1.5B wrote 已发货 ("shipped") for a delivered order.
 * @param must the skill's `answer-states` (`tool.field`)
 * @param language the ticket's language, when clear (language.ts)
 */
export function answerSheet(results: readonly VerifiedResult[], must: readonly string[] = [], language?: string | null): string | null {
  const latest = new Map<string, Record<string, unknown>>();
  for (const r of results) if (r.data && typeof r.data === 'object' && !Array.isArray(r.data)) latest.set(r.tool, r.data as Record<string, unknown>);
  if (!latest.size) return null;
  const shown = (key: string, v: unknown): string | null => {
    // The amount first, in currency units, under its name without `_cents`: shown `amount_cents 116213
    // (= 1162.13)`, the 1.5B wrote "1162.13 cents" three times.
    if (typeof v === 'number')
      return /_cents$/i.test(key) && Number.isInteger(v) ? `${words(key.replace(/_cents$/i, ''))} ${(v / 100).toFixed(2)} (${key} ${v})` : `${key} ${v}`;
    if (typeof v === 'string' || typeof v === 'boolean') return `${key} ${JSON.stringify(v)}`;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number')) return `${key} ${JSON.stringify(v)}`;
    return null;
  };
  const lines = [...latest].map(
    ([tool, data]) =>
      `- ${tool}: ${Object.entries(data)
        .flatMap(([k, v]) => shown(k, v) ?? [])
        .join(', ')}`,
  );
  // The states the results hold come first (what the customer asked about), then the values the skill's answer must state.
  const states = [...latest].flatMap(([tool, data]) =>
    Object.keys(data).flatMap((field) =>
      STATE_FIELD.test(field) && typeof data[field] === 'string' && !must.includes(`${tool}.${field}`) ? [`${tool}.${field}`] : [],
    ),
  );
  const required = [...states, ...must].flatMap((spec) => {
    const cut = spec.lastIndexOf('.');
    const value = latest.get(spec.slice(0, cut))?.[spec.slice(cut + 1)];
    if (value === undefined || value === null) return [];
    const field = spec.slice(cut + 1);
    const chinese = language === 'zh' && STATE_FIELD.test(field) ? CHINESE_STATES[String(value)]?.[0] : undefined;
    return [
      typeof value === 'number' && /_cents$/i.test(field) && Number.isInteger(value)
        ? `the ${words(field.replace(/_cents$/i, ''))} ${(value / 100).toFixed(2)}`
        : chinese
          ? `the ${words(field)} ${value} (in Chinese: ${chinese})`
          : `the ${words(field)} ${value}`,
    ];
  });
  // What the answer contract names but no verified result gives (a placed order is not tracked): the
  // 1.5B, told to state the carrier "when tracked", named UPS for an order nothing had tracked.
  const given = new Set([...latest.values()].flatMap((data) => Object.keys(data)));
  const absent = [...new Set(must.map((spec) => spec.slice(spec.lastIndexOf('.') + 1)).filter((field) => !given.has(field)))];
  return [
    'Verified values (write them exactly as given here; an amount as the number in currency units, never the cents):',
    ...lines,
    ...(required.length ? [`Reply to the customer in one or two full sentences that state ${required.join(', ')}.`] : []),
    ...(absent.length ? [`No verified result gives the ${absent.map(words).join(', the ')}: do not state ${absent.length > 1 ? 'them' : 'one'}.`] : []),
  ].join('\n');
}

/** A field's name as words: `issued_at` → `issued at`. */
const words = (field: string) => field.replace(/_/g, ' ');

/**
 * Which language a ticket or an answer is written in, among those the router reads (en, zh, ja, es,
 * de), from its script and its most common words: the model turn names the ticket's language in its
 * prompt, and a final answer written in another one is refused (model/checks.ts). `null` when the
 * text does not say clearly (too short, mixed, or another language): nothing is then asked or
 * refused. Pure and deterministic.
 */

/** A language the runtime tells apart. */
export type Language = 'en' | 'zh' | 'ja' | 'es' | 'de';

/** Each language's name as a prompt says it. */
export const LANGUAGE_NAMES: Readonly<Record<Language, string>> = { en: 'English', zh: 'Chinese', ja: 'Japanese', es: 'Spanish', de: 'German' };

const KANA = /[\u3040-\u30ff]/gu;
const HAN = /[\u4e00-\u9fff]/gu;
const LATIN_WORD = /[a-záéíóúüñäöß]+/giu;

/** Short, frequent words of each Latin-script language (none shared by two of them). */
const COMMON_WORDS: Readonly<Record<'en' | 'es' | 'de', ReadonlySet<string>>> = {
  en: new Set(
    'the and is are was were my your you i to of it this that not for with on where when what please have has been be can will would order our we at from its'.split(
      ' ',
    ),
  ),
  es: new Set(
    'el la los las del que y en un una por para con mi es está están se lo su sus pedido hola gracias cuándo dónde qué pero ya fue ha han hay le muy como tu usted nuestro todavía'.split(
      ' ',
    ),
  ),
  de: new Set(
    'der die das und ist ich nicht mein meine ein eine mit für auf wo wann bitte danke habe noch zu von den dem des sie wurde wir ihr ihre ihren bestellung hallo schon ist sind kein keine'.split(
      ' ',
    ),
  ),
};

/**
 * The language `text` is written in, or null when it does not say clearly. Japanese is told by its
 * kana, Chinese by Han characters without kana (when they outweigh the Latin words), and English,
 * Spanish and German by their common words: at least two, and twice as many as the next language's.
 */
export function languageOf(text: string): Language | null {
  const kana = (text.match(KANA) ?? []).length;
  const han = (text.match(HAN) ?? []).length;
  const words = (text.match(LATIN_WORD) ?? []).map((w) => w.toLowerCase());
  if (kana >= 2) return 'ja';
  if (han >= 4 && han >= words.length) return 'zh';
  const hits = (['en', 'es', 'de'] as const).map((lang) => ({ lang, n: words.filter((w) => COMMON_WORDS[lang].has(w)).length })).sort((a, b) => b.n - a.n);
  const [best, next] = hits as [{ lang: Language; n: number }, { lang: Language; n: number }];
  return best.n >= 2 && best.n >= 2 * next.n ? best.lang : null;
}

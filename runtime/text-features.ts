/**
 * Moved: the text featurizer and {@link TextModel} live in `features/text/` (a layer of their own, used
 * by Thought's intent router and Observation's error classifier). This re-export keeps the two stage
 * modules that still import this path working; import `features/text/index.ts` instead, and delete
 * this file once nothing imports it.
 */
export * from '../features/text/index.ts';

// Types of scripts/layers.js (plain JavaScript, so that eslint.config.js can import it too).
export declare const LAYERS: readonly (readonly string[])[];
export declare const TOOLS: readonly string[];
export declare function partOf(path: string): string;
export declare function forbiddenFor(part: string): string[];

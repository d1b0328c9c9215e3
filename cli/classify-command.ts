/**
 * `tao classify-error` and `tao classify`: the two ONNX classifiers run on one input from the
 * command line (Observation's error classifier, Thought's intent router), their answer as JSON.
 */
import { readFileSync } from 'node:fs';
import { setting } from '../runtime/config.ts';
import { usage } from './usage.ts';

/** Prints the error classifier's label, confidence and whether Observation would adopt it, for the payload in `source` (a file, or - for standard input). */
export async function classifyErrorCommand(source: string): Promise<number> {
  const { DEFAULT_ERROR_MODEL_DIR, ERROR_ADOPTION_THRESHOLD, ErrorClassifier, adoptable } = await import('../processors/observation/classifier.ts');
  const text = source === '-' ? readFileSync(0, 'utf8') : readFileSync(source, 'utf8');
  const classifier = await ErrorClassifier.load(setting(process.env, 'TAO_ERROR_MODEL_DIR') ?? DEFAULT_ERROR_MODEL_DIR);
  try {
    const c = await classifier.classify(text);
    console.log(JSON.stringify({ ...c, adopted: adoptable(c), threshold: ERROR_ADOPTION_THRESHOLD }));
  } finally {
    await classifier.close();
  }
  return 0;
}

/** Prints the intent router's intent, confidence and slots for `text`; 2 (a usage error, `usageText` printed) when it is empty. */
export async function classifyCommand(text: string, usageText: string): Promise<number> {
  const { DEFAULT_INTENT_MODEL_DIR, IntentRouter } = await import('../processors/thought/planners/intent-model.ts');
  if (!text.trim()) return usage('classify needs the task text: tao classify "where is my order O-12345678"', usageText);
  const router = await IntentRouter.load(setting(process.env, 'TAO_INTENT_MODEL_DIR') ?? DEFAULT_INTENT_MODEL_DIR);
  try {
    console.log(JSON.stringify(await router.route(text)));
  } finally {
    await router.close();
  }
  return 0;
}

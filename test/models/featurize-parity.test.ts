import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  FEATURE_DIMS,
  FEATURIZER_CONFIG,
  featureHashes,
  featureStrings,
  featurize,
  featurizeSparse,
  fnv1a32,
  jsonShape,
  normalizeText,
  structureSignals,
  truncateCodePoints,
} from '../../features/text/index.ts';

interface Vector {
  text: string;
  normalized: string;
  structure: string[];
  indices: number[];
  values: number[];
}
const file = JSON.parse(readFileSync(new URL('../../models/featurize-vectors.json', import.meta.url), 'utf8')) as { featurizer: unknown; vectors: Vector[] };

describe('text featurizer parity with models/featurize.py', () => {
  test('the committed vectors were made with the same featurizer parameters', () => {
    assert.deepEqual(file.featurizer, { ...FEATURIZER_CONFIG });
    assert.ok(file.vectors.length >= 12);
  });

  for (const [i, v] of file.vectors.entries()) {
    const label = `vector ${i}: ${JSON.stringify(v.text.length > 40 ? v.text.slice(0, 40) + '…' : v.text)}`;
    test(label, () => {
      assert.equal(normalizeText(v.text), v.normalized);
      assert.deepEqual(structureSignals(v.text), v.structure);
      const got = featurizeSparse(v.text);
      assert.ok(got.indices instanceof Int32Array && got.values instanceof Float32Array, "the model input tensors' types");
      assert.deepEqual(Array.from(got.indices), v.indices);
      assert.equal(got.values.length, v.values.length);
      for (let k = 0; k < v.values.length; k++) assert.ok(Math.abs(got.values[k]! - v.values[k]!) <= 1e-6, `value ${k}: ${got.values[k]} vs ${v.values[k]}`);
      const dense = featurize(v.text);
      assert.equal(dense.length, FEATURE_DIMS);
      let nonZero = 0;
      for (const x of dense) if (x !== 0) nonZero++;
      assert.equal(nonZero, v.indices.length);
    });
  }

  test('empty and whitespace-only texts give the zero vector; vectors are unit length otherwise', () => {
    assert.deepEqual(featurizeSparse(''), { indices: new Int32Array(0), values: new Float32Array(0) });
    const { values } = featurizeSparse('token expired');
    const norm = Math.sqrt(values.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-6);
  });

  test('the JSON scan tells a body cut short from an intact or a broken one, whatever its length', () => {
    assert.equal(jsonShape('{"ok":true}'), 'json_ok');
    assert.equal(jsonShape(' [1,{"a":"]}"}]\n'), 'json_ok', 'brackets inside strings do not count');
    assert.equal(jsonShape('{"id":"O-12345678","items":[{"sku":"A1"}'), 'json_cut');
    assert.equal(jsonShape('{"note":"cut inside a str'), 'json_cut');
    assert.equal(jsonShape('{"a":1}}'), 'json_bad');
    assert.equal(jsonShape('{"a":[1}'), 'json_bad');
    assert.equal(jsonShape('{"a":1} and more'), 'json_bad');
    assert.equal(jsonShape('error: {"a":1}'), null, 'does not start like JSON');
    const long = '{"rows":[' + Array.from({ length: 2000 }, (_, i) => `{"n":${i}}`).join(',') + ']}';
    assert.equal(jsonShape(long), 'json_ok', 'a long body is scanned whole, not the truncated 4096 code points');
    assert.ok(featurizeSparse(long).indices.length > 0);
    assert.deepEqual(structureSignals('  at a.b(C.java:1)\n  at d.e(F.java:2)'), ['trace']);
    assert.deepEqual(structureSignals('  at a.b(C.java:1) only one frame'), []);
  });

  test('the hashes computed over code points are the hashes of the feature strings, for every kind of character', () => {
    const texts = [
      ...file.vectors.map((v) => v.text),
      '订单 O-20231105-88812 退款失败：支付网关超时',
      'ｆｕｌｌｗｉｄｔｈ ﬁle ①②, emoji 😀😀 and 𠀋𠀋 astral CJK',
      'lone \ud800 surrogate and \u200b zero width; tab\there',
      'a',
      'x'.repeat(5000) + ' tail beyond the truncation',
    ];
    for (const text of texts) {
      const normalized = normalizeText(text);
      const expected = new Set([...featureStrings(normalized)].map(fnv1a32));
      // Twice: the second call reuses the scratch space the first one grew.
      for (let i = 0; i < 2; i++) assert.deepEqual(featureHashes(normalized), expected, JSON.stringify(text.slice(0, 40)));
    }
    assert.equal(featureHashes('').size, 0);
  });

  test('truncation counts code points and never splits a surrogate pair', () => {
    assert.equal(truncateCodePoints('ab😀cd', 3), 'ab😀');
    assert.equal(truncateCodePoints('ab😀cd', 2), 'ab');
    assert.equal(truncateCodePoints('short', 4096), 'short');
  });
});

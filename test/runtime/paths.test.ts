import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_ERROR_MODEL_DIR } from '../../processors/observation/classifier.ts';
import { DEFAULT_RULES_FILE } from '../../processors/observation/rules.ts';
import { DEFAULT_INTENT_MODEL_DIR } from '../../processors/thought/planners/intent-model.ts';
import { DEFAULT_FLOWS_DIR, DEFAULT_ROUTES_FILE } from '../../processors/thought/planners/flows.ts';
import { TAO_BIN } from '../../cli/processes.ts';
import { readValueSchema } from '../../runtime/codec.ts';
import { PACKAGE_ROOT, packagePath, packageRootOf } from '../../runtime/paths.ts';
import { DEFAULT_CATALOG_DIR } from '../../tools/catalog.ts';

test('the package root is the same from the source tree and from the compiled dist/ tree', () => {
  assert.equal(packageRootOf('/opt/tao-kafka/runtime'), '/opt/tao-kafka');
  assert.equal(packageRootOf('/opt/tao-kafka/dist/runtime'), '/opt/tao-kafka');
  // A package installed under a folder named like the build dir is still found by its own layout.
  assert.equal(packageRootOf('/srv/dist/tao-kafka/runtime'), '/srv/dist/tao-kafka');
});

test("the package root holds tao-kafka's package.json, and every default data path lies under it and exists", () => {
  assert.equal((JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string }).name, 'tao-kafka');
  const dirs = { DEFAULT_FLOWS_DIR, DEFAULT_CATALOG_DIR, DEFAULT_ERROR_MODEL_DIR, DEFAULT_INTENT_MODEL_DIR };
  for (const [name, dir] of Object.entries(dirs)) {
    assert.ok(dir.startsWith(PACKAGE_ROOT), `${name} ${dir} is not under ${PACKAGE_ROOT}`);
    assert.ok(statSync(dir).isDirectory(), `${name} ${dir} is not a directory`);
  }
  for (const model of [DEFAULT_ERROR_MODEL_DIR, DEFAULT_INTENT_MODEL_DIR]) {
    assert.ok(existsSync(join(model, 'model.onnx')) && existsSync(join(model, 'labels.json')), `${model} lacks model.onnx or labels.json`);
  }
  for (const file of [DEFAULT_ROUTES_FILE, DEFAULT_RULES_FILE, TAO_BIN, packagePath('infra', 'kafka', 'pom.xml'), packagePath('infra', 'registry', 'go.mod')]) {
    assert.ok(file.startsWith(PACKAGE_ROOT) && statSync(file).isFile(), `${file} is missing`);
  }
  assert.equal(readValueSchema('tasks').type, 'record');
});

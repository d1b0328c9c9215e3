import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  DEFAULT_ERROR_MODEL_DIR,
  ERROR_ADOPTION_THRESHOLD,
  ERROR_LABELS,
  ErrorClassifier,
  MAX_INPUT_CODE_POINTS,
  adoptable,
} from '../../../processors/observation/classifier.ts';
import { DEFAULT_INTENT_MODEL_DIR } from '../../../processors/thought/planners/intent-model.ts';
import { type EvalReport, metrics, readJsonl } from '../../models/eval-metrics.ts';

const MODEL_DIR = new URL('../../../models/error-classifier/', import.meta.url);

const TOKEN_EXPIRED_200 = JSON.stringify({ code: 200, success: false, message: 'token expired, please log in again', data: null });
const NGINX_502 =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n';
const ORDER_JSON = JSON.stringify({
  order_id: 'O-12345678',
  status: 'shipped',
  customer: { id: 'cus_8812', name: 'Alice Chen' },
  items: [{ sku: 'MUG-BLUE', qty: 2 }],
  total: 42.5,
  currency: 'EUR',
});

describe('ErrorClassifier', () => {
  let clf: ErrorClassifier;
  before(async () => {
    clf = await ErrorClassifier.load();
  });
  after(async () => {
    await clf.close();
  });

  test('loads the committed model; its id names the sha256 of model.onnx', () => {
    const sha = createHash('sha256')
      .update(readFileSync(new URL('model.onnx', MODEL_DIR)))
      .digest('hex');
    assert.equal(clf.modelId, `error-classifier@${sha.slice(0, 12)}`);
    assert.match(clf.modelId, /^error-classifier@[0-9a-f]{12}$/);
  });

  test('a 200 body saying the token expired is auth_failed with confidence >= 0.95', async () => {
    const c = await clf.classify(TOKEN_EXPIRED_200);
    assert.equal(c.label, 'auth_failed');
    assert.ok(c.confidence >= ERROR_ADOPTION_THRESHOLD, `confidence ${c.confidence}`);
    assert.ok(adoptable(c));
    assert.equal(c.model, clf.modelId);
  });

  test('an nginx 502 HTML page is network_issue (the proxy could not reach its upstream), not server_error', async () => {
    const c = await clf.classify(NGINX_502);
    assert.equal(c.label, 'network_issue');
    assert.ok(c.confidence >= ERROR_ADOPTION_THRESHOLD, `confidence ${c.confidence}`);
  });

  test('a normal order JSON is ok', async () => {
    assert.equal((await clf.classify(ORDER_JSON)).label, 'ok');
  });

  test("the demo's small flat records are ok, confidently enough to adopt", async () => {
    // The crm answer once scored ~0.92 (a record this small looked a little like a cut body).
    for (const b of [
      JSON.stringify({ customer_id: 'C-123456', email: 'normal@example.com', name: 'Ada Lovelace' }),
      JSON.stringify({ customer_id: 'C-123456', tier: 'gold' }),
    ]) {
      const c = await clf.classify(b);
      assert.equal(c.label, 'ok', b);
      assert.ok(c.confidence >= ERROR_ADOPTION_THRESHOLD, `${b}: confidence ${c.confidence}`);
    }
  });

  test('a success body with empty error fields is ok, not an error', async () => {
    const body = JSON.stringify({
      sid: 'SM0123456789abcdef0123456789abcdef',
      status: 'delivered',
      to: '+4915112345678',
      error_code: null,
      error_message: null,
    });
    assert.equal((await clf.classify(body)).label, 'ok');
  });

  test('a few more kinds, English and Chinese', async () => {
    const cases: Array<[string, string]> = [
      ['{"code":10001,"msg":"登录过期，请重新登录"}', 'auth_failed'],
      ['{"error":{"code":429,"message":"Rate limit exceeded. Try again in 30 seconds."}}', 'rate_limited'],
      ['{"code":404,"msg":"订单不存在"}', 'not_found'],
      ['{"error":{"code":408,"message":"Request timed out after 30000ms"}}', 'timeout'],
    ];
    const got = await clf.classifyBatch(cases.map(([t]) => t));
    assert.deepEqual(
      got.map((c) => c.label),
      cases.map(([, l]) => l),
    );
  });

  test('gateway, mesh and connection failures are network_issue, distinct from timeout', async () => {
    const texts = [
      'upstream connect error or disconnect/reset before headers. reset reason: connection failure',
      'no healthy upstream',
      '{"message":"An invalid response was received from the upstream server"}',
      'Error: getaddrinfo ENOTFOUND billing.partner.example',
      'Get "http://stock.internal:8080/v1": dial tcp 10.1.2.3:8080: connect: connection refused',
    ];
    for (const [i, c] of (await clf.classifyBatch(texts)).entries()) assert.equal(c.label, 'network_issue', texts[i]);
    assert.equal((await clf.classify('java.net.SocketTimeoutException: Read timed out')).label, 'timeout');
  });

  test('a JSON body with control characters in a field is data_corrupted, the intact one ok', async () => {
    const nul = ORDER_JSON.replace('Alice Chen', 'Alice\u0000\u0000 Chen\u0007');
    assert.equal((await clf.classify(nul)).label, 'data_corrupted', nul);
    assert.equal((await clf.classify(ORDER_JSON)).label, 'ok');
  });

  test('deterministic: the same text gives the same output, alone or in a batch', async () => {
    const texts = [TOKEN_EXPIRED_200, NGINX_502, ORDER_JSON, '', '🙂 \u2028 <b>?</b>'];
    const first = await Promise.all(texts.map((t) => clf.classify(t)));
    const again = await Promise.all(texts.map((t) => clf.classify(t)));
    assert.deepEqual(again, first);
    assert.deepEqual(await clf.classifyBatch(texts), first);
    for (const c of first) {
      assert.ok((ERROR_LABELS as readonly string[]).includes(c.label));
      assert.ok(c.confidence >= 0 && c.confidence <= 1);
    }
    const probs = await clf.probabilities(NGINX_502);
    assert.ok(Math.abs(Object.values(probs).reduce((s, p) => s + p, 0) - 1) < 1e-5);
  });

  test(`inputs are truncated to ${MAX_INPUT_CODE_POINTS} code points before featurizing`, async () => {
    const head = NGINX_502 + ' '.repeat(MAX_INPUT_CODE_POINTS - NGINX_502.length);
    assert.deepEqual(await clf.classify(head + TOKEN_EXPIRED_200.repeat(50)), await clf.classify(head));
  });

  test('refuses a model directory with other labels', async () => {
    await assert.rejects(ErrorClassifier.load(DEFAULT_INTENT_MODEL_DIR), /not an error-classifier model/);
  });

  test('the committed eval report describes this model: same macro-F1, accuracy and adoption over eval.jsonl', async () => {
    const report = JSON.parse(readFileSync(new URL('eval-report.json', MODEL_DIR), 'utf8')) as EvalReport;
    const labels = JSON.parse(readFileSync(new URL('labels.json', MODEL_DIR), 'utf8')) as { labels: string[]; model_sha256: string };
    assert.equal(report.model.id, clf.modelId);
    assert.equal(labels.model_sha256, report.model.sha256);
    assert.deepEqual(labels.labels, [...ERROR_LABELS]);
    const evalBytes = readFileSync(new URL('eval.jsonl', MODEL_DIR));
    assert.equal(createHash('sha256').update(evalBytes).digest('hex'), report.eval.sha256);
    const examples = readJsonl(new URL('eval.jsonl', MODEL_DIR));
    assert.equal(examples.length, report.eval.n);
    assert.ok(examples.length >= 120);
    const got = await clf.classifyBatch(examples.map((e) => e.text));
    const m = metrics(
      report.labels,
      examples.map((e) => e.label),
      got.map((c) => c.label),
    );
    assert.ok(Math.abs(m.macro_f1 - report.eval.raw.macro_f1) < 1e-12, `node macro-F1 ${m.macro_f1} vs report ${report.eval.raw.macro_f1}`);
    assert.equal(report.eval.macro_f1, report.eval.raw.macro_f1);
    assert.ok(Math.abs(m.accuracy - report.eval.raw.accuracy) < 1e-12);
    assert.deepEqual(m.matrix, report.eval.raw.confusion.matrix);
    const adopted = got.filter((c) => c.confidence >= report.eval.adoption.threshold).length;
    assert.equal(adopted, report.eval.adoption.count);
    // one at a time gives the same labels as the batch
    const single = [];
    for (const e of examples) single.push((await clf.classify(e.text)).label);
    assert.deepEqual(
      single,
      got.map((c) => c.label),
    );
  });

  test('the default directory is models/error-classifier', () => {
    assert.ok(DEFAULT_ERROR_MODEL_DIR.replace(/\/$/, '').endsWith('models/error-classifier'));
  });
});

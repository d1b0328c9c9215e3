/**
 * `tao eval`'s gate, without a broker: a candidate that loses a ticket the baseline solved, answers
 * one wrongly, or solves too few fails, naming the tickets; one that only gains passes. And the
 * command line: a usage error is one line, the usage, exit 2, before anything starts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { TAO_BIN } from '../../cli/processes.ts';
import { compare, failures } from '../../eval/compare.ts';
import type { RegressionTicket, Score } from '../../eval/regression-set.ts';
import type { EvalRun, Scored } from '../../eval/runs.ts';

function scored(id: string, verdict: Score['verdict'], cost: number | null = null): Scored {
  const ticket = { id, intent: id.split('-')[0]!, category: 'order', language: 'en', text: id, calls: [], facts: [], expect: 'completed' } as RegressionTicket;
  const run: EvalRun = {
    thoughtId: `t-${id}`,
    status: verdict === 'solved' ? 'completed' : 'escalated',
    reasonCode: 'completed',
    said: 'ok',
    verifiedTools: new Set(),
    calledTools: new Set(),
    results: [],
    given: [id],
    routed: ticket.intent,
    turns: [{ ms: 10, promptTokens: 100, completionTokens: 20, cachedTokens: null }],
    refused: {},
    wallMs: 1000,
    cost,
  };
  return { ticket, run, score: { verdict, missingFacts: [], missingTools: [], unsupported: [], why: verdict } };
}

test('a ticket the baseline solved and the candidate does not is broken, named, and fails the gate', () => {
  const base = [scored('order-1', 'solved'), scored('claim-1', 'solved'), scored('claim-2', 'unsolved')];
  const cand = [scored('order-1', 'unsolved'), scored('claim-1', 'solved'), scored('claim-2', 'solved')];
  const v = compare({ scored: cand, wallMs: 5 }, { scored: base, wallMs: 6 }, 0);
  assert.equal(v.passed, false);
  assert.deepEqual(v.broke, ['order-1']);
  assert.deepEqual(
    v.tickets.map((t) => t.change),
    ['broke', 'same', 'fixed'],
  );
  assert.deepEqual(failures(v), ['broke 1 ticket(s) the baseline solved: order-1']);
  assert.equal(v.baseline?.solved, 2);
  assert.equal(v.candidate.escalated, 1);
  assert.equal(v.candidate.tokens, 360);
});

test('the same results pass; a wrong run or a solved share below the threshold fails without a baseline too', () => {
  const same = [scored('order-1', 'solved', 0.25), scored('claim-1', 'solved', 0.5)];
  const ok = compare({ scored: same, wallMs: 1 }, { scored: same, wallMs: 1 }, 0.85);
  assert.equal(ok.passed, true);
  assert.equal(ok.candidate.cost, 0.75);
  const wrong = compare({ scored: [scored('order-1', 'wrong'), scored('claim-1', 'solved')], wallMs: 1 }, null, 0);
  assert.deepEqual([wrong.passed, wrong.wrong, wrong.broke], [false, ['order-1'], []]);
  const few = compare({ scored: [scored('order-1', 'unsolved'), scored('claim-1', 'solved')], wallMs: 1 }, null, 0.85);
  assert.deepEqual(failures(few), ['solved 50.0% of the set, below --min-solved 85%']);
});

const work = mkdtempSync(join(tmpdir(), 'tao-eval-usage-'));
after(() => rmSync(work, { recursive: true, force: true }));

function taoEval(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [TAO_BIN, 'eval', ...args], { timeout: 60000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
    ),
  );
}

test('`tao eval` usage errors exit 2 with one line and the usage; --help exits 0', async () => {
  const release = join(work, 'release');
  mkdirSync(release);
  const badSettings = join(work, 'bad');
  mkdirSync(badSettings);
  writeFileSync(join(badSettings, 'settings.json'), '{"KAFKA_BROKERS": "x:1"}');
  const cases: Array<[string[], RegExp]> = [
    [[], /--release <folder> is required/],
    [['--release', join(work, 'nope')], /release folder .*nope: no such folder/],
    [['--release', badSettings], /KAFKA_BROKERS is not a run setting/],
    [['--release', release, '--min-solved', '2'], /--min-solved must be a number from 0 to 1/],
    [['--release', release, '--base-url', 'http://x/v1'], /--base-url and --model go together/],
    [['--release', release, '--only', 'no-such-ticket'], /--only: no ticket no-such-ticket/],
    [['--release', release, '--set', join(work, 'none.json')], /--set: no such file/],
    [['--release', release, '--bogus'], /Unknown option '--bogus'/],
  ];
  for (const [args, message] of cases) {
    const { code, stderr } = await taoEval(args);
    assert.equal(code, 2, `${args.join(' ')}: ${stderr}`);
    assert.match(stderr.split('\n')[0]!, message);
    assert.match(stderr, /usage: tao eval --release <folder>/);
  }
  const help = await taoEval(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: tao eval --release <folder>/);
});

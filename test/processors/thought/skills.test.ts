import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../../cli/processes.ts';
import { DEFAULT_SKILLS_DIR, SKILL_DEFAULTS, loadSkills } from '../../../processors/thought/skills.ts';
import { skillsOptionsFromEnv } from '../../../processors/thought/skills-config.ts';
import { ConfigError } from '../../../runtime/errors.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog } from '../../../tools/catalog.ts';

const run = promisify(execFile);
const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, {});
const root = mkdtempSync(join(tmpdir(), 'tao-skills-'));
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A fresh skills folder holding the given skills (folder name → SKILL.md text, or files by relative path). */
function skillsDir(skills: Record<string, string | Record<string, string>>): string {
  const dir = join(root, `set-${++n}`);
  for (const [folder, content] of Object.entries(skills)) {
    const files = typeof content === 'string' ? { 'SKILL.md': content } : content;
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, folder, path, '..'), { recursive: true });
      writeFileSync(join(dir, folder, path), text);
    }
  }
  return dir;
}

const skillMd = (frontmatter: string, body = '# Prompt\n\nDo the thing.') => `---\n${frontmatter.trim()}\n---\n${body}\n`;
const valid = (name: string, extra = '') =>
  skillMd(`name: ${name}\ndescription: Looks an order up.\nallowed-tools: orders.get\nmetadata:\n  version: "1"\n${extra}`);

test("the six shipped skills load against the shipped catalog, one per demo intent, with the tools of that intent's flows", () => {
  const skills = loadSkills(DEFAULT_SKILLS_DIR, catalog);
  const routes = JSON.parse(readFileSync(new URL('../../../flows/routes.json', import.meta.url), 'utf8')) as { intents: Record<string, string[]> };
  assert.deepEqual(
    skills.list().map((s) => s.ref),
    ['account-access@1', 'expense-claim-status@1', 'invoice-copy@1', 'order-status@1', 'outage-report@1', 'refund-request@1'],
  );
  for (const [intent, flowRefs] of Object.entries(routes.intents)) {
    const skill = skills.forIntent(intent);
    assert.ok(skill, `a skill serves ${intent}`);
    assert.equal(skill.name, intent.replace(/_/g, '-'));
    assert.equal(skill.planner, undefined, 'demo skills leave the mode to TAO_PLANNER');
    assert.equal(skill.runnable, true);
    // The model may call exactly the tools the intent's flows call: no fewer (it could not do the job), no more.
    const flowTools = flowRefs.flatMap((ref) => {
      const [id, version] = ref.split('@');
      const flow = JSON.parse(readFileSync(new URL(`../../../flows/${id}.v${version}.json`, import.meta.url), 'utf8')) as { nodes: Array<{ tool: string }> };
      return flow.nodes.map((node) => node.tool);
    });
    assert.deepEqual([...skill.allowedTools].sort(), [...new Set(flowTools)].sort(), intent);
    for (const tool of skill.allowedTools) assert.match(skill.prompt, new RegExp(`\`${tool.replace('.', '\\.')}\``), `${skill.name}'s prompt explains ${tool}`);
    assert.match(skill.prompt, /## The final answer/);
  }
  assert.equal(skills.forIntent('unknown'), undefined);
});

test('a broken frontmatter rule stops loading with one line naming the file and the rule', () => {
  const cases: Array<[string, Record<string, string | Record<string, string>>, string | RegExp]> = [
    [
      'bad name characters',
      { Refund_Request: valid('Refund_Request') },
      /Refund_Request\/SKILL\.md: name must be 1-64 lowercase letters, digits and hyphens, .* \(got "Refund_Request"\)$/,
    ],
    ['leading hyphen', { '-refund': valid('-refund') }, /name must be 1-64 lowercase letters/],
    ['double hyphen', { 'refund--request': valid('refund--request') }, /name must be 1-64 lowercase letters.*without "--"/],
    ['name longer than 64', { ['a'.repeat(65)]: valid('a'.repeat(65)) }, /name must be 1-64/],
    ['name is not the folder name', { refunds: valid('refund-request') }, /refunds\/SKILL\.md: name "refund-request" must equal the folder name "refunds"$/],
    ['missing description', { refunds: skillMd('name: refunds') }, /refunds\/SKILL\.md: missing required field "description"$/],
    ['blank description', { refunds: skillMd('name: refunds\ndescription: "   "') }, /description must be 1-1024 characters and not blank/],
    [
      'description too long',
      { refunds: skillMd(`name: refunds\ndescription: ${'x'.repeat(1025)}`) },
      /refunds\/SKILL\.md: description must be 1-1024 characters and not blank \(got 1025 characters\)$/,
    ],
    [
      'compatibility too long',
      { refunds: skillMd(`name: refunds\ndescription: d\ncompatibility: ${'x'.repeat(501)}`) },
      /compatibility must be 1-500 characters/,
    ],
    [
      'unknown tool',
      { 'refund-request': skillMd('name: refund-request\ndescription: d\nallowed-tools: orders.get refunds.crate') },
      /refund-request\/SKILL\.md: allowed-tools names unknown tool "refunds\.crate" \(known: billing\.get_invoice, .*, status\.service\)$/,
    ],
    ['a tool twice', { refunds: skillMd('name: refunds\ndescription: d\nallowed-tools: [orders.get, orders.get]') }, /allowed-tools names "orders\.get" twice/],
    [
      'allowed-tools neither string nor list',
      { refunds: skillMd('name: refunds\ndescription: d\nallowed-tools: {orders.get: yes}') },
      /allowed-tools must be a space-delimited string or a list of tool names/,
    ],
    [
      'non-string metadata value',
      { refunds: skillMd('name: refunds\ndescription: d\nmetadata:\n  version: 1') },
      /refunds\/SKILL\.md: metadata\.version must be a positive integer written as a string, e\.g\. "1" \(got number\)$/,
    ],
    [
      "non-string value of another product's metadata key",
      { refunds: skillMd('name: refunds\ndescription: d\nmetadata:\n  stars: 5') },
      /metadata\.stars must be a string \(quote it in YAML\) \(got number\)$/,
    ],
    [
      'metadata not a map',
      { refunds: skillMd('name: refunds\ndescription: d\nmetadata: [a, b]') },
      /metadata must be a map of string keys to string values \(got a list\)/,
    ],
    [
      'bad planner value',
      { refunds: valid('refunds', '  planner: chain-of-thought') },
      /metadata\.planner must be one of plan, react, plan-replan \(got "chain-of-thought"\)$/,
    ],
    [
      'bad integer',
      { refunds: valid('refunds', '  max-tokens: "12.5"') },
      /metadata\.max-tokens must be an integer from 1 to 1000000 written as a string, e\.g\. "1" \(got "12\.5"\)$/,
    ],
    [
      'integer out of range',
      { refunds: valid('refunds', '  max-model-turns: "500"') },
      /metadata\.max-model-turns must be an integer from 1 to 100 .*\(got "500"\)$/,
    ],
    [
      'version not an integer',
      { refunds: skillMd('name: refunds\ndescription: d\nmetadata:\n  version: "1.0"') },
      /metadata\.version must be a positive integer .*\(got "1\.0"\)$/,
    ],
    [
      'max-tokens not below the context window',
      { refunds: valid('refunds', '  context-window: "1024"\n  max-tokens: "1024"') },
      /metadata\.max-tokens \(1024\) must be below metadata\.context-window \(1024\)$/,
    ],
    [
      'intents without a version',
      { refunds: skillMd('name: refunds\ndescription: d\nmetadata:\n  intents: refund_request') },
      /metadata\.intents needs metadata\.version/,
    ],
    ['bad intent list', { refunds: valid('refunds', '  intents: "refund request"') }, /metadata\.intents must be comma-separated intent names/],
    [
      'two skills for one intent',
      { a: valid('a', '  intents: refund_request'), b: valid('b', '  intents: order_status, refund_request') },
      /b\/SKILL\.md: metadata\.intents: intent "refund_request" is already served by skill "a"$/,
    ],
    [
      'a misspelled format key',
      { refunds: skillMd('name: refunds\ndescription: d\nallowed_tools: orders.get') },
      /unknown key "allowed_tools" \(did you mean "allowed-tools"\?\)$/,
    ],
    [
      'a misspelled metadata key',
      { refunds: valid('refunds', '  maxTokens: "100"') },
      /unknown key "metadata\.maxTokens" \(did you mean "metadata\.max-tokens"\?\)$/,
    ],
    [
      'invalid YAML',
      { refunds: skillMd('name: refunds\nname: again\ndescription: d') },
      /refunds\/SKILL\.md: frontmatter is not valid YAML \(line 3: Map keys must be unique\)$/,
    ],
    ['frontmatter that is not a mapping', { refunds: skillMd('- name: refunds') }, /frontmatter must be a YAML mapping/],
    ['no frontmatter', { refunds: '# Just a prompt\n' }, /refunds\/SKILL\.md: must start with YAML frontmatter between two "---" lines$/],
    [
      'a link to a missing reference',
      { refunds: valid('refunds').replace('Do the thing.', 'See [policy](references/policy.md).') },
      /refunds\/SKILL\.md: links to references\/policy\.md, which does not exist$/,
    ],
    ['skill.md in lower case', { refunds: { 'skill.md': valid('refunds') } }, /refunds\/skill\.md: name the file SKILL\.md \(upper case\)$/],
  ];
  for (const [what, skills, expected] of cases) {
    const dir = skillsDir(skills);
    assert.throws(
      () => loadSkills(dir, catalog),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, what);
        assert.doesNotMatch(err.message, /\n/, `${what}: one line`);
        assert.ok(err.message.startsWith(dir), `${what}: names the file: ${err.message}`);
        if (typeof expected === 'string') assert.equal(err.message, expected, what);
        else assert.match(err.message, expected, what);
        return true;
      },
      what,
    );
  }
});

test('a skill path inside the working directory is reported relative to it, as written in the docs', () => {
  const dir = mkdtempSync(join(process.cwd(), '.tmp-skills-'));
  try {
    mkdirSync(join(dir, 'refund-request'));
    writeFileSync(join(dir, 'refund-request', 'SKILL.md'), skillMd('name: refund-request\ndescription: d\nallowed-tools: refunds.crate'));
    assert.throws(
      () => loadSkills(dir, catalog),
      (err: Error) =>
        err.message.startsWith(`${dir.slice(process.cwd().length + 1)}/refund-request/SKILL.md: allowed-tools names unknown tool "refunds.crate" (known: `),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a minimal third-party skill (name and description only) loads, with other products' keys ignored, but is not runnable without a version", () => {
  const dir = skillsDir({
    'pdf-processing': skillMd(
      'name: pdf-processing\ndescription: Extract PDF text, fill forms, merge files. Use when handling PDFs.',
      '# PDFs\n\nUse pdfplumber.',
    ),
    'code-review': skillMd(
      'name: code-review\ndescription: Reviews code.\nlicense: Proprietary. LICENSE.txt has complete terms\nargument-hint: "[file]"\ndisable-model-invocation: true\nallowed-tools:\n  - orders.get\nmetadata:\n  author: example-org',
    ),
    'not-a-skill': { 'README.md': 'no SKILL.md here' },
    // The format's reference validator accepts lowercase letters beyond a-z.
    'données-2': skillMd('name: données-2\ndescription: Analyse des données.'),
  });
  writeFileSync(join(dir, 'README.md'), 'files beside the skill folders are not skills');
  const skills = loadSkills(dir, catalog);
  assert.deepEqual(
    skills.list().map((s) => s.name),
    ['code-review', 'données-2', 'pdf-processing'],
  );
  const pdf = skills.get('pdf-processing')!;
  assert.equal(pdf.version, null);
  assert.equal(pdf.runnable, false);
  assert.equal(pdf.ref, 'pdf-processing');
  assert.equal(pdf.prompt, '# PDFs\n\nUse pdfplumber.');
  assert.deepEqual(pdf.allowedTools, []);
  assert.equal(pdf.planner, undefined);
  assert.deepEqual(
    { maxModelTurns: pdf.maxModelTurns, tokenBudget: pdf.tokenBudget, contextWindow: pdf.contextWindow, maxTokens: pdf.maxTokens, maxReplans: pdf.maxReplans },
    SKILL_DEFAULTS,
  );
  assert.throws(
    () => skills.runnable('pdf-processing'),
    (err: Error) => err instanceof ConfigError && err.message === 'skill "pdf-processing" is not runnable: its SKILL.md has no metadata.version',
  );
  assert.throws(() => skills.runnable('nope'), /unknown skill "nope" \(known: code-review, données-2, pdf-processing\)/);
  const review = skills.get('code-review')!;
  assert.deepEqual(review.ignoredKeys, ['argument-hint', 'disable-model-invocation']);
  assert.deepEqual(review.allowedTools, ['orders.get']);
  assert.deepEqual(review.metadata, { author: 'example-org' });
  assert.equal(review.license, 'Proprietary. LICENSE.txt has complete terms');
});

test('a runnable skill takes its settings from metadata, and the router finds it by any of its intents', () => {
  const dir = skillsDir({
    lookup: valid(
      'lookup',
      '  intents: order_status, order_lookup\n  planner: plan-replan\n  model: qwen2.5-7b-instruct\n  max-model-turns: "12"\n  token-budget: "50000"\n  context-window: "32768"\n  max-tokens: "1024"',
    ),
  });
  const skills = loadSkills(dir, catalog);
  const skill = skills.runnable('lookup');
  assert.equal(skill.ref, 'lookup@1');
  assert.equal(skills.forIntent('order_lookup'), skill);
  assert.deepEqual(skill.intents, ['order_status', 'order_lookup']);
  assert.deepEqual(
    {
      planner: skill.planner,
      model: skill.model,
      maxModelTurns: skill.maxModelTurns,
      tokenBudget: skill.tokenBudget,
      contextWindow: skill.contextWindow,
      maxTokens: skill.maxTokens,
    },
    { planner: 'plan-replan', model: 'qwen2.5-7b-instruct', maxModelTurns: 12, tokenBudget: 50000, contextWindow: 32768, maxTokens: 1024 },
  );
});

test('references are read on demand, by file name only', () => {
  const dir = skillsDir({
    refunds: {
      'SKILL.md': valid('refunds').replace('Do the thing.', 'Follow [the policy](references/policy.md).'),
      'references/policy.md': 'v1 of the policy',
      'references/forms.md': 'forms',
    },
  });
  const skill = loadSkills(dir, catalog).get('refunds')!;
  assert.deepEqual(skill.references(), ['forms.md', 'policy.md']);
  // Changed after loading: the text is read when first asked for, not at start-up.
  writeFileSync(join(dir, 'refunds', 'references', 'policy.md'), 'v2 of the policy');
  assert.equal(skill.reference('policy.md'), 'v2 of the policy');
  writeFileSync(join(dir, 'refunds', 'references', 'policy.md'), 'v3 of the policy');
  assert.equal(skill.reference('policy.md'), 'v2 of the policy', 'kept once read');
  assert.throws(
    () => skill.reference('../SKILL.md'),
    (err: Error) => err instanceof ConfigError && err.message === 'skill "refunds" has no reference "../SKILL.md" (it has: forms.md, policy.md)',
  );
  assert.throws(() => skill.reference('missing.md'), ConfigError);
  assert.deepEqual(loadSkills(DEFAULT_SKILLS_DIR, catalog).get('refund-request')!.references(), ['refund-policy.md']);
});

test('TAO_SKILLS_DIR chooses the folder (empty: the default); a missing folder is a one-line error', () => {
  assert.equal(skillsOptionsFromEnv({}).dir, DEFAULT_SKILLS_DIR);
  assert.equal(skillsOptionsFromEnv({ TAO_SKILLS_DIR: root }).dir, root);
  assert.equal(skillsOptionsFromEnv({ TAO_SKILLS_DIR: '' }).dir, DEFAULT_SKILLS_DIR);
  assert.throws(
    () => loadSkills(join(root, 'nope'), catalog),
    (err: Error) => err instanceof ConfigError && /nope does not exist \(TAO_SKILLS_DIR\)$/.test(err.message),
  );
});

test('`tao skills list` prints the six shipped skills; `show` prints one with its prompt; a broken skill exits 1 with its one-line error', async () => {
  const list = (await run(process.execPath, [TAO_BIN, 'skills', 'list'])).stdout.trim().split('\n');
  assert.match(list[0]!, /^SKILL\s+PLANNER\s+INTENTS\s+TOOLS$/);
  assert.equal(list.length, 7);
  assert.match(
    list.find((l) => l.startsWith('refund-request@1'))!,
    /^refund-request@1\s+default\s+refund_request\s+orders\.get refunds\.create$/,
  );

  const json = JSON.parse((await run(process.execPath, [TAO_BIN, 'skills', 'list', '--json'])).stdout) as Array<{
    ref: string;
    intents: string[];
    allowed_tools: string[];
  }>;
  assert.deepEqual(json.map((s) => s.intents[0]).sort(), [
    'account_access',
    'expense_claim_status',
    'invoice_copy',
    'order_status',
    'outage_report',
    'refund_request',
  ]);

  const show = (await run(process.execPath, [TAO_BIN, 'skills', 'show', 'refund-request'])).stdout;
  assert.match(show, /^refund-request@1\n/);
  assert.match(show, /references\s+references\/refund-policy\.md/);
  assert.match(show, /Never refund more than the order's `total_cents`/);

  assert.match((await run(process.execPath, [TAO_BIN, 'skills', '--help'])).stdout, /usage: tao skills list/);

  const broken = skillsDir({ 'refund-request': skillMd('name: refund-request\ndescription: d\nallowed-tools: refunds.crate') });
  const failed = await run(process.execPath, [TAO_BIN, 'skills', 'list'], { env: { ...process.env, TAO_SKILLS_DIR: broken } }).then(
    () => assert.fail('a broken skill must fail the command'),
    (err: { code: number; stderr: string }) => err,
  );
  assert.equal(failed.code, 1);
  assert.match(failed.stderr.trim(), /^tao: .*refund-request\/SKILL\.md: allowed-tools names unknown tool "refunds\.crate" \(known: .*\)$/);
});

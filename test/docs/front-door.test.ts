/**
 * The README is a front door: read in ten minutes (at most 2,000 words), and nothing in it or in
 * CONTRIBUTING.md points nowhere. Every `tao` command they show exists with the options it is shown
 * with (its own `--help` lists them), every `npm run` script is in package.json, and every relative
 * link of the repository's Markdown resolves to a file and, with `#anchor`, to one of its headings.
 * No broker needed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

const FRONT = ['README.md', 'CONTRIBUTING.md'];
const read = (path: string) => readFileSync(join(PACKAGE_ROOT, path), 'utf8');

/** Every Markdown file of the repository (not node_modules, dist or dot-folders such as .infra). */
function markdownFiles(dir = PACKAGE_ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || e.name === 'node_modules' || e.name === 'dist') return [];
    const path = join(dir, e.name);
    return e.isDirectory() ? markdownFiles(path) : e.name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks (links and headings inside them are examples). */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const text = heading!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** The shell lines of `sh` blocks and the inline code spans that run a command. */
function commands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```/gm)].flatMap(([, body]) => body!.split('\n'));
  const inline = [...prose(markdown).matchAll(/`((?:npx tao|npm run|npm test) [^`]*)`/g)].map(([, code]) => code!);
  // a line's own comment, redirections and what follows a pipe or `&&` are not the command's
  return [...blocks, ...inline].flatMap((line) => line.replace(/\s#\s.*$/, '').split(/&&|\|(?!\|)|(?<![>&])&(?!&)/));
}

test('README.md is at most 2,000 words', () => {
  const words = read('README.md').split(/\s+/).filter(Boolean).length;
  assert.ok(words <= 2000, `README.md has ${words} words (at most 2,000: move detail to docs/ or CONTRIBUTING.md)`);
});

test('every relative link of the Markdown resolves to a file, and its #anchor to a heading there', () => {
  const broken: string[] = [];
  for (const file of markdownFiles()) {
    const from = relative(PACKAGE_ROOT, file);
    for (const [, target] of prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z+.-]*:/i.test(target!)) continue; // https:, mailto:
      const [path, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
      if (!existsSync(resolved)) broken.push(`${from}: ${target} (no such file)`);
      else if (anchor && (statSync(resolved).isDirectory() || !anchors(readFileSync(resolved, 'utf8')).has(anchor)))
        broken.push(`${from}: ${target} (no heading #${anchor} in ${relative(PACKAGE_ROOT, resolved)})`);
    }
  }
  assert.deepEqual(broken, []);
});

test('every npm script the README and CONTRIBUTING.md run is in package.json', () => {
  const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
  const used = FRONT.flatMap((f) => commands(read(f))).flatMap((line) => [...line.matchAll(/npm run ([\w:-]+)/g)].map(([, s]) => s!));
  assert.ok(used.length > 3, 'the README shows npm scripts');
  for (const script of new Set(used)) assert.ok(scripts.includes(script), `npm run ${script}: no such script in package.json`);
});

test('every tao command the README and CONTRIBUTING.md show exists, with the options it is shown with', async () => {
  const run = promisify(execFile);
  // `npm run demo -- <options>` is `tao demo <options>`
  const lines = FRONT.flatMap((f) => commands(read(f)))
    .map((line) => line.replace(/npm run demo(?: --)?/, 'npx tao demo'))
    .filter((line) => line.includes('npx tao '));
  const shown = new Map<string, Set<string>>();
  for (const line of lines) {
    const words = line.slice(line.indexOf('npx tao ') + 'npx tao '.length).split(/\s+/);
    const path: string[] = [];
    for (const w of words) {
      if (path.length === 2 || !/^[a-z][a-z-]*$/.test(w)) break;
      path.push(w);
    }
    const key = path.join(' ');
    const options = shown.get(key) ?? new Set<string>();
    for (const [option] of line.matchAll(/(?<=\s)--[a-z][a-z-]*/g)) options.add(option);
    shown.set(key, options);
  }
  assert.ok(shown.size >= 10, `the README and CONTRIBUTING.md show the tao commands (${[...shown.keys()].join(', ')})`);
  for (const [command, options] of shown) {
    const args = command === 'help' ? ['help'] : [...command.split(' '), '--help'];
    const { stdout } = await run(process.execPath, [TAO_BIN, ...args], { timeout: 60000 }).catch((err: Error & { stderr?: string }) => {
      throw new Error(`tao ${args.join(' ')} fails: ${err.stderr ?? err.message}`);
    });
    assert.match(stdout, /usage: tao/, `tao ${args.join(' ')} prints its usage`);
    for (const option of options) assert.ok(stdout.includes(option), `tao ${command}: ${option} is not in its --help`);
  }
});

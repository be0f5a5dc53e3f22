/**
 * The pages that mirror the code are checked against it, so that a change of the code
 * that leaves a page behind fails here: the error catalogue (docs/errors.md), the command
 * line (README.md's table, docs/operations.md's synopses), the README's first jobs (its
 * TypeScript job is the example file; its SQL job, run in this process, gives the rows it
 * shows), and every link and path the pages name.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { COMMANDS } from '../../src/cli/commands/Commands.js';
import { errorTable } from '../../src/errors/ErrorTable.js';
import { ERRORS } from '../../src/errors/Errors.js';
import { Catalog } from '../../src/sql/Catalog.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { SqlSession } from '../../src/sql/SqlSession.js';
import { runLocalJob } from '../helpers/localJob.js';

const README_MAX_LINES = 400;

/** Every Markdown page of the repository: the README, docs/ and the notes beside the code in src/. */
const PAGES = [
  'README.md',
  ...fs.readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
  ...fs.readdirSync('src', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).map((f) => `src/${f}`),
];

function read(file: string): string {
  return fs.readFileSync(file, 'utf8');
}

/** The text of a page's section, from its `## ` heading to the next one. */
function section(file: string, heading: string): string {
  const text = read(file);
  const start = text.indexOf(`\n## ${heading}\n`);
  expect(start, `${file} has a section "## ${heading}"`).toBeGreaterThanOrEqual(0);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The fenced code blocks of a text, in order. */
function fences(text: string): string[] {
  return [...text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** Code without its comments and blank lines, each line trimmed: what a reader of either copy runs. */
function codeOnly(code: string): string[] {
  return code
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .map((line) => line.replace(/\s*\/\/ .*$/, '').trim())
    .filter((line) => line !== '');
}

function codesIn(text: string): Set<string> {
  return new Set(text.match(/SPW_ERR_[A-Z0-9_]+/g) ?? []);
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of read(file).split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (heading === null) continue;
    const base = anchorOf(heading[1]);
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

test("docs/errors.md's table is the catalogue's, row for row (node scripts/error-table.mjs prints it)", () => {
  const page = read('docs/errors.md');
  const start = page.indexOf('| code |');
  const table = page.slice(start, page.indexOf('\n\n', start) < 0 ? undefined : page.indexOf('\n\n', start)).trimEnd();
  expect(table).toBe(errorTable());
});

test('every catalogued code is in docs/errors.md, and every SPW_ERR_ code a page names is catalogued', () => {
  const onPage = codesIn(read('docs/errors.md'));
  expect(Object.keys(ERRORS).filter((code) => !onPage.has(code))).toEqual([]);
  for (const page of PAGES) expect([...codesIn(read(page))].filter((code) => !(code in ERRORS)), page).toEqual([]);
});

test("the README's command table has a row for every command, and help", () => {
  const table = section('README.md', 'Commands');
  for (const command of COMMANDS) expect(table).toContain(`| \`spillway ${command.name}\` |`);
  expect(table).toContain('| `spillway help [COMMAND]` |');
  const rows = table.split('\n').filter((line) => line.startsWith('| `spillway '));
  expect(rows).toHaveLength(COMMANDS.length + 1);
});

test("docs/operations.md's command line lists every command with exactly its options", () => {
  const synopses = /```\n([\s\S]*?)```/.exec(section('docs/operations.md', 'Command line'))![1].trim().split('\n');
  expect(synopses).toEqual(COMMANDS.map((c) => c.synopsis()));
});

test(`the README stays a first page: at most ${README_MAX_LINES} lines`, () => {
  expect(read('README.md').split('\n').length).toBeLessThanOrEqual(README_MAX_LINES);
});

test('every relative link of a page leads to a file that exists, and to a heading of it', () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    for (const [, target] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const [file, anchor] = target.split('#');
      const resolved = file === '' ? page : path.join(path.dirname(page), file);
      if (!fs.existsSync(resolved)) broken.push(`${page}: ${target}`);
      else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) broken.push(`${page}: ${target} (no such heading)`);
    }
  }
  expect(broken).toEqual([]);
});

test('every path of the repository a page names in backticks exists', () => {
  const missing: string[] = [];
  for (const page of PAGES) {
    for (const [, named] of read(page).matchAll(/`((?:src|test|bench|scripts|docs|examples|ui)\/[^`\s]*)`/g)) {
      // A placeholder (`<timestamp>.json`) names no one file, and bench/results/ is what a bench run writes.
      if (named.includes('<') || named.startsWith('bench/results/')) continue;
      // A line number is no part of the path.
      if (!fs.existsSync(named.replace(/:\d+(-\d+)?$/, ''))) missing.push(`${page}: ${named}`);
    }
  }
  expect(missing).toEqual([]);
});

test("the README's first TypeScript job is examples/wordcount.ts, comments aside", () => {
  const [shown] = fences(section('README.md', 'A first job in TypeScript'));
  expect(codeOnly(shown)).toEqual(codeOnly(read('examples/wordcount.ts')));
});

test("the README's first SQL job gives the rows the README shows", async () => {
  const [csv, statements, shown] = fences(section('README.md', 'A first job in SQL'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-docs-sql-'));
  try {
    const file = path.join(dir, 'orders.csv');
    fs.writeFileSync(file, csv);
    const results = new SqlSession(new Catalog()).execute(statements.replace("'orders.csv'", `'${file}'`));
    const query = results.at(-1)!;
    if (query.kind !== 'job') throw new Error(`the last statement gave ${query.kind}, not a job`);
    const { collected } = await runLocalJob(sqlJob(query.submission.params as unknown as Record<string, unknown>), { parallelism: 2 });
    const rows = [...collected.values()].flatMap((parts) => [...parts.values()].flat()) as Record<string, unknown>[];
    const table = shown.split('\n').filter((line) => line.startsWith('| ')).map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
    expect(query.columns).toEqual(table[0]);
    const asShown = rows.map((row) => query.columns.map((column) => String(row[column]))).sort();
    expect(asShown).toEqual(table.slice(1));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('every file a page names by its name alone (`Task.ts`) is somewhere in the repository', () => {
  const roots = ['src', 'test', 'bench', 'scripts', 'examples', 'docs'];
  const names = new Set(roots.flatMap((root) => fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).map((f) => path.basename(f))));
  const missing: string[] = [];
  for (const page of PAGES) {
    for (const [, named] of read(page).matchAll(/`([A-Za-z][A-Za-z0-9]*\.(?:ts|md|mjs))`/g)) if (!names.has(named)) missing.push(`${page}: ${named}`);
  }
  expect(missing).toEqual([]);
});

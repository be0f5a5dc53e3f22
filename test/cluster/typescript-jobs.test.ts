import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { writeCorpus } from '../../src/job/Corpus.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { linkSpillwayPackage } from '../../src/job/PackageRoot.js';
import { clusterTest } from '../helpers/cluster.js';
import { tempDir } from '../helpers/plane.js';
import { spillway } from '../helpers/command.js';

// Runs dist/ (npm run build first): the CLI and the cluster are child processes.
const work = tempDir('typescript-jobs');
const corpus = path.join(work.dir, 'corpus');
let url = '';



/** Words as examples/wordcount.ts finds them, counted in one loop. */
function referenceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const file of fs.readdirSync(corpus)) {
    for (const [word] of fs.readFileSync(path.join(corpus, file), 'utf8').toLowerCase().matchAll(/[\p{L}\p{N}']+/gu)) {
      counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  return counts;
}

/** A job file in the temporary folder, where `spillway` resolves as it would in a user's project. */
function jobFile(name: string, source: string): string {
  const file = path.join(work.dir, 'jobs', name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  linkSpillwayPackage(path.dirname(file));
  fs.writeFileSync(file, source);
  return file;
}

beforeAll(() => {
  writeCorpus(corpus, 3, 256 << 10, 11);
});

afterAll(() => {
  work.remove();
});

// Started by the suite below that asks for it: the refusals first need none.
const test = clusterTest({ taskManagers: 2, slots: 2, memory: '64mb' });

describe('a TypeScript job refused before anything is uploaded', () => {
  // No JobManager listens there: a refusal must come before any request.
  const nowhere = 'http://127.0.0.1:9';

  test('a syntax error is reported with the file, line and column, and the exit code is 1', async () => {
    const file = jobFile('broken.ts', "import { JobBuilder } from 'spillway';\n\nconst job = new JobBuilder('broken';\nexport default job.build();\n");
    const { code, stderr } = await spillway('submit', file, '--jobmanager', nowhere);
    expect(code).toBe(1);
    expect(stderr).toContain(`${file} does not compile:`);
    expect(stderr).toMatch(/broken\.ts\(3,36\): error TS1005: '\)' expected\./);
  });

  test('--typecheck refuses a record type that cannot cross an exchange, naming the line and the part', async () => {
    const source = [
      "import { JobBuilder } from 'spillway';",
      'class Point { constructor(readonly x: number) {} norm(): number { return Math.abs(this.x); } }',
      "const job = new JobBuilder('points');",
      'job.generate(() => [new Point(1)]).rebalance().collect();',
      'export default job.build();',
      '',
    ].join('\n');
    const file = jobFile('points.ts', source);
    const { code, stderr } = await spillway('submit', file, '--typecheck', '--jobmanager', nowhere);
    expect(code).toBe(1);
    expect(stderr).toContain(`${file} has type errors:`);
    expect(stderr).toMatch(/points\.ts\(4,1\): error TS2684: The 'this' context of type 'Stream<Point>'/);
    expect(stderr).toContain('"not Exchangeable: a function"');
  });

  test('a relative import is refused: a job is uploaded as one module', async () => {
    const file = jobFile('helper.ts', "import { words } from './words.js';\nexport default words;\n");
    const { code, stderr } = await spillway('submit', file, '--jobmanager', nowhere);
    expect(code).toBe(1);
    expect(stderr).toContain(`${file} imports ./words.js: a job is uploaded as one module`);
  });

  test('--typecheck of a JavaScript job is refused', async () => {
    const file = jobFile('plain.mjs', 'export default {};\n');
    const { code, stderr } = await spillway('submit', file, '--typecheck', '--jobmanager', nowhere);
    expect(code).toBe(1);
    expect(stderr).toContain(`--typecheck checks TypeScript jobs (.ts, .mts), not ${file}`);
  });
});

describe('TypeScript jobs on a local cluster', () => {
  test.beforeAll(({ cluster }) => {
    url = cluster.url;
  }, 60_000);

  test('`spillway submit examples/wordcount.ts --param input=DIR --param output=OUT --wait` exits 0 and writes exact counts', async () => {
    const output = path.join(work.dir, 'counts');
    const { code, stdout, stderr } = await spillway(
      'submit', 'examples/wordcount.ts', '--jobmanager', url, '--param', `input=${corpus}`, '--param', `output=${output}`, '--parallelism', '4', '--wait',
    );
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/FINISHED/);
    expect(fs.readdirSync(output).sort()).toEqual(['part-00000', 'part-00001', 'part-00002', 'part-00003']);
    const got = new Map<string, number>();
    for (const part of fs.readdirSync(output)) {
      for (const line of fs.readFileSync(path.join(output, part), 'utf8').split('\n').filter(Boolean)) {
        const [word, count] = line.split('\t');
        expect(got.has(word), `${word} written twice`).toBe(false);
        got.set(word, Number(count));
      }
    }
    expect(got).toEqual(referenceCounts());
  });

  test('with --typecheck the example is checked, then runs; without output its counts are collected', async () => {
    const { code, stdout, stderr } = await spillway('submit', 'examples/wordcount.ts', '--typecheck', '--jobmanager', url, '--param', `input=${corpus}`, '--wait');
    expect(code, stderr).toBe(0);
    const id = /submitted (\S+)/.exec(stdout)![1];
    const { records } = await callJson<{ records: [string, number][] }>('GET', `${url}/jobs/${id}/result`);
    expect(new Map(records)).toEqual(referenceCounts());
    expect(records.length).toBe(referenceCounts().size);
  });

  test('examples/word-lengths.ts: a histogram of word lengths over 1, sorted by length', async () => {
    const { code, stdout, stderr } = await spillway('submit', 'examples/word-lengths.ts', '--jobmanager', url, '--param', `input=${corpus}`, '--parallelism', '1', '--wait');
    expect(code, stderr).toBe(0);
    const id = /submitted (\S+)/.exec(stdout)![1];
    const { records } = await callJson<{ records: [number, number][] }>('GET', `${url}/jobs/${id}/result`);
    const expected = new Map<number, number>();
    for (const [word, count] of referenceCounts()) if (word.length > 1) expected.set(word.length, (expected.get(word.length) ?? 0) + count);
    expect(records).toEqual([...expected].sort((a, b) => a[0] - b[0]));
  });
});

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { callJson, useClusterToken } from '../../src/rpc/HttpClient.js';
import { tempDir } from '../helpers/plane.js';

// A user's project: the packed package installed from its tarball, a typed job importing
// `spillway`, checked with the user's tsc and run on a cluster started from the install.
// Packs dist/ as it is: npm run build first.

const work = tempDir('package');
const project = path.join(work.dir, 'project');
let cluster: ChildProcess | undefined;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: 180_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

const npm = (args: string[], cwd: string): Promise<Run> => run(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, cwd);
const inProject = (...args: string[]): Promise<Run> => run(process.execPath, args, project);

/**
 * The project's package-lock.json: the tarball, and spillway's own dependencies pinned
 * as this repository's lock pins them. npm's cache holds those tarballs (npm ci put
 * them there) but not the registry's metadata, so with every version pinned `npm ci
 * --offline` installs without the network.
 */
function writeProject(tarball: string): void {
  const own = JSON.parse(fs.readFileSync('package.json', 'utf8')) as Record<string, unknown>;
  const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { dev?: boolean; link?: boolean }> };
  const dependency = `file:${tarball}`;
  const packages: Record<string, unknown> = {
    '': { name: 'user-project', dependencies: { spillway: dependency } },
    'node_modules/spillway': { version: own.version, resolved: dependency, license: own.license, dependencies: own.dependencies, bin: own.bin, engines: own.engines },
  };
  for (const [where, entry] of Object.entries(lock.packages)) if (where !== '' && !entry.dev && !entry.link) packages[where] = entry;
  fs.mkdirSync(project, { recursive: true });
  const write = (file: string, value: unknown): void => fs.writeFileSync(path.join(project, file), typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  // The lock pins what this repository's overrides chose (Node 20 versions of two of fastify's dependencies); a root's overrides apply.
  write('package.json', { name: 'user-project', private: true, type: 'module', dependencies: { spillway: dependency }, overrides: own.overrides });
  write('package-lock.json', { name: 'user-project', lockfileVersion: 3, requires: true, packages });
  // skipLibCheck off and no @types: spillway's declarations must stand on their own.
  write('tsconfig.json', { compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', types: [], skipLibCheck: false, noEmit: true }, files: ['job.ts'] });
  write('job.ts', SALES_JOB);
  write('bad.ts', BAD_JOB);
}

const SALES_JOB = `import { JobBuilder, numberParam, type JobDefinition, type JobParams } from 'spillway';

interface Sale {
  store: string;
  cents: number;
  at: Date;
}
interface Totals {
  cents: number;
  latest: Date;
}

const later = (a: Date, b: Date): Date => (a > b ? a : b);

/** Sales per store: the total and the latest sale, which crosses the exchange as a Date. */
export default function salesByStore(params: JobParams): JobDefinition {
  const sales = numberParam(params, 'sales', 1000, 1);
  const job = new JobBuilder('sales-by-store');
  job
    .generate(function* (subtask, parallelism): Generator<Sale> {
      for (let i = subtask; i < sales; i += parallelism) yield { store: 's' + (i % 7), cents: i, at: new Date(i * 1000) };
    })
    .keyBy((sale) => sale.store)
    .combine<Totals>({
      create: (sale) => ({ cents: sale.cents, latest: sale.at }),
      merge: (totals, sale) => ({ cents: totals.cents + sale.cents, latest: later(totals.latest, sale.at) }),
      mergeCombiners: (a, b) => ({ cents: a.cents + b.cents, latest: later(a.latest, b.latest) }),
    })
    .map(([store, totals]): [string, number, string] => [store, totals.cents, totals.latest.toISOString()])
    .collect();
  return job.build();
}
`;

const BAD_JOB = `import { JobBuilder } from 'spillway';

class Money {
  constructor(readonly cents: number) {}
  plus(other: Money): Money {
    return new Money(this.cents + other.cents);
  }
}

const job = new JobBuilder('bad');
job.generate(() => [new Money(1)]).rebalance().collect();
export default job.build();
`;

/** Starts `spillway local` from the installed package in a process group of its own, so that every child goes with it. */
async function startCluster(): Promise<string> {
  const child = spawn(process.execPath, ['node_modules/spillway/bin/spillway.js', 'local', '--taskmanagers', '2', '--slots', '2', '--memory', '64mb', '--port', '0'], {
    cwd: project,
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  cluster = child;
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /jobmanager (http:\/\/\S+?),/.exec(seen);
      const secretFile = /cluster secret in (\S+) /.exec(seen);
      // This process calls the cluster too, with the secret the cluster printed the place of.
      if (match && secretFile) {
        useClusterToken(match[1], fs.readFileSync(secretFile[1], 'utf8').trim());
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`spillway local exited with ${code}: ${seen}`)));
  });
}

async function stopCluster(): Promise<void> {
  const child = cluster;
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(-child.pid, 'SIGTERM');
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

beforeAll(async () => {
  const packed = await npm(['pack', '--ignore-scripts', '--silent', '--pack-destination', work.dir], process.cwd());
  expect(packed.code, packed.stderr).toBe(0);
  writeProject(path.join(work.dir, packed.stdout.trim().split('\n').pop()!));
  let installed = await npm(['ci', '--offline', '--no-audit', '--no-fund'], project);
  // A cache without some tarball: fetch only what is missing.
  if (installed.code !== 0) installed = await npm(['ci', '--prefer-offline', '--no-audit', '--no-fund'], project);
  expect(installed.code, installed.stderr).toBe(0);
}, 240_000);

afterAll(async () => {
  await stopCluster();
  work.remove();
});

describe('the packed package in a user project', () => {
  test('the tarball holds the built code, its types and the command, not the sources or tests', () => {
    const root = path.join(project, 'node_modules', 'spillway');
    expect(fs.existsSync(path.join(root, 'dist/src/index.js'))).toBe(true);
    expect(fs.existsSync(path.join(root, 'dist/src/index.d.ts'))).toBe(true);
    expect(fs.existsSync(path.join(root, 'bin/spillway.js'))).toBe(true);
    expect(fs.readdirSync(root).sort()).toEqual(['README.md', 'bin', 'dist', 'examples', 'package.json']);
    // The web UI comes built, its browser libraries vendored: an installed JobManager serves it without them.
    expect(fs.readdirSync(path.join(root, 'dist')).sort()).toEqual(['src', 'ui']);
    expect(fs.readdirSync(path.join(root, 'dist/ui/vendor')).sort()).toEqual(['dagre.esm.js', 'hooks.module.js', 'htm.module.js', 'preact.module.js', 'uPlot.esm.js', 'uPlot.min.css']);
  });

  test("the user's tsc type-checks a typed job that imports spillway", async () => {
    const { code, stdout } = await inProject('node_modules/typescript/bin/tsc', '-p', '.');
    expect(stdout).toBe('');
    expect(code).toBe(0);
  });

  test('the installed types refuse a record with methods at the exchange', async () => {
    const refused = await inProject('node_modules/spillway/bin/spillway.js', 'submit', 'bad.ts', '--typecheck', '--jobmanager', 'http://127.0.0.1:9');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/bad\.ts\(11,1\): error TS2684: The 'this' context of type 'Stream<Money>'/);
    expect(refused.stderr).toContain('plus: "not Exchangeable: a function"');
  });

  test('the job, type-checked and submitted by the installed command, runs on a cluster started from the install: exact totals', async () => {
    const url = await startCluster();
    const submitted = await inProject('node_modules/spillway/bin/spillway.js', 'submit', 'job.ts', '--typecheck', '--jobmanager', url, '--param', 'sales=1000', '--parallelism', '4', '--wait');
    expect(submitted.code, submitted.stdout + submitted.stderr).toBe(0);
    const id = /submitted (\S+)/.exec(submitted.stdout)![1];
    const { records } = await callJson<{ records: [string, number, string][] }>('GET', `${url}/jobs/${id}/result`);
    const expected = Array.from({ length: 7 }, (_, store): [string, number, string] => {
      const sales = Array.from({ length: 1000 }, (_, i) => i).filter((i) => i % 7 === store);
      return [`s${store}`, sales.reduce((a, b) => a + b, 0), new Date(Math.max(...sales) * 1000).toISOString()];
    });
    expect(records.sort((a, b) => a[0].localeCompare(b[0]))).toEqual(expected);
  }, 120_000);
});

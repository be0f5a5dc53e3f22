/**
 * The test layout holds: every test file is in test/unit/ or test/cluster/ (the two vitest
 * projects; a file elsewhere would never run), named in one style, and a unit test starts
 * no process or thread and talks to no service (Redis, PostgreSQL), so that `npx vitest
 * --project unit` stays fast and needs nothing but its own process.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';

const TEST_ROOT = path.resolve('test');
/** Lower-case words joined by '-', an optional facet after a dot: `managed-memory.test.ts`, `partition-types.conformance.test.ts`. */
const NAME = /^[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)?\.test\.ts$/;
/** What only a cluster test may use: child processes and task threads. */
const STARTS_PROCESSES = /from '(node:child_process|node:worker_threads|[./]+\/src\/cli\/LocalCluster\.js|[./]+\/src\/taskmanager\/TaskThreadPool\.js|[./]+\/helpers\/cluster\.js)'/;

/** What only a cluster test may talk to: the services of the connector tests, and their clients. */
const TALKS_TO_SERVICES = /from '(ioredis|pg|pg-copy-streams|[./]+\/helpers\/services\.js)'/;

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(dir, f));
}

test('every test file is in test/unit/ or test/cluster/, named as lower-case words joined by -', () => {
  const files = testFiles(TEST_ROOT).map((f) => path.relative(TEST_ROOT, f));
  expect(files.length).toBeGreaterThan(0);
  expect(files.filter((f) => !/^(unit|cluster)\/[^/]+$/.test(f)), 'outside test/unit/ and test/cluster/').toEqual([]);
  expect(files.filter((f) => !NAME.test(path.basename(f))), 'named in another style').toEqual([]);
});

test('no unit test starts a process or a thread', () => {
  const offenders = testFiles(path.join(TEST_ROOT, 'unit')).filter((f) => STARTS_PROCESSES.test(fs.readFileSync(f, 'utf8')));
  expect(offenders.map((f) => path.relative(TEST_ROOT, f))).toEqual([]);
});

test('no unit test talks to a service (Redis, PostgreSQL): those tests are cluster tests', () => {
  const offenders = testFiles(path.join(TEST_ROOT, 'unit')).filter((f) => TALKS_TO_SERVICES.test(fs.readFileSync(f, 'utf8')));
  expect(offenders.map((f) => path.relative(TEST_ROOT, f))).toEqual([]);
});

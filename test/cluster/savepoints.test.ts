import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { JobState } from '../../src/lifecycle/JobState.js';
import type { CheckpointMetadata } from '../../src/jobmanager/checkpoint/CheckpointMetadata.js';
import { callJson, HttpError } from '../../src/rpc/HttpClient.js';
import { sha256 } from '../../src/runtime/checkpoint/SnapshotFile.js';
import { clusterTest } from '../helpers/cluster.js';
import { waitUntil } from '../helpers/failover.js';
import { add, countingModule, drop, expectedRows, keyCounts, lines, savepoint, sortRows, waitRecordsIn } from '../helpers/keyedCounts.js';
import { eventually, sleep } from '../helpers/eventually.js';
import { cancelAll, failure, result, submitJob, uploadModule, waitFor, waitRunning } from '../helpers/jobs.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-savepoints-'));
const checkpointDir = path.join(work, 'checkpoints');
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const test = clusterTest({ taskManagers: 2, slots: 2, extraArgs: ['--checkpoint-dir', checkpointDir, '--cancel-timeout', '5000'] }, { leakCheck: true });

let url: string;
test.beforeAll(({ cluster }) => {
  url = cluster.url;
});

/** Jobs a test started: canceled after it whatever happened, so that a failure does not hold the next test's slots. */
const running = new Set<string>();
test.afterEach(() => cancelAll(url, running));

/** Submits a job, canceled after the test unless it ended (one accepted that should not have been too). */
const submit = (body: Record<string, unknown>): Promise<string> => submitJob(url, body).then((id) => (running.add(id), id));

/** No periodic checkpoint commits anything before a stop: what a stopped job committed came with its savepoint. */
const SAVEPOINTS_ONLY = { interval: 600_000 };

/** Runs the keyed count of `module` over `input` until it has counted `content` (dropped as one file, `name`), then stops it with a savepoint; the savepoint's folder. */
async function countAndStop(module: string, input: string, name: string, content: readonly string[], extra: Record<string, unknown> = {}): Promise<{ id: string; path: string }> {
  const id = await submit({ module, params: { input }, parallelism: 2, checkpoints: SAVEPOINTS_ONLY, ...extra });
  await waitRunning(url, id);
  drop(input, name, content);
  await waitRecordsIn(url, id, 'count', content.length);
  const taken = await savepoint(url, id, path.join(work, 'savepoints'), true);
  expect(taken.status, taken.failure).toBe('COMPLETED');
  const status = await waitFor(url, id, 20_000);
  expect(status.state, status.error).toBe(JobState.FINISHED);
  running.delete(id);
  return { id, path: taken.path! };
}

/** Rewrites a savepoint's `_metadata` as `change` makes it, with the checksum it then has: a savepoint of another topology. */
function rewriteMetadata(folder: string, change: (metadata: CheckpointMetadata) => void): void {
  const file = path.join(folder, '_metadata');
  const { metadata } = JSON.parse(fs.readFileSync(file, 'utf8')) as { metadata: CheckpointMetadata };
  change(metadata);
  fs.writeFileSync(file, JSON.stringify({ checksum: sha256(Buffer.from(JSON.stringify(metadata))), metadata }));
}

describe('savepoints on a cluster of 2 TaskManagers', () => {
  test('a keyed count stopped with a savepoint and restored at parallelism 2 -> 4 -> 1: each run FINISHES with every record it read committed, and together they count every record once', async () => {
    const input = path.join(work, 'rescale-in');
    fs.mkdirSync(input);
    const module = await uploadModule(url, countingModule());
    const counted = new Map<string, number>();
    let from: string | undefined;
    let first = 0;
    for (const [step, parallelism] of [2, 4, 1].entries()) {
      const id = await submit({ module, params: { input }, parallelism, checkpoints: SAVEPOINTS_ONLY, ...(from === undefined ? {} : { savepoint: from }) });
      await waitRunning(url, id);
      // Files in stages: what the run reads is the file of its own step, plus nothing it read before.
      const content = lines(first, 3000, 37);
      first += content.length;
      drop(input, `step-${step}-a`, content.slice(0, 1500));
      await sleep(100);
      drop(input, `step-${step}-b`, content.slice(1500));
      await waitRecordsIn(url, id, 'count', content.length);
      const taken = await savepoint(url, id, path.join(work, 'savepoints'), true);
      expect(taken.status, taken.failure).toBe('COMPLETED');
      const status = await waitFor(url, id, 20_000);
      expect(status.state, status.error).toBe(JobState.FINISHED);
      const added = keyCounts(content);
      expect(sortRows(await result<[string, number]>(url, id)), `step ${step} at parallelism ${parallelism}`).toEqual(expectedRows(counted, added));
      add(counted, added);
      expect(fs.existsSync(path.join(taken.path!, '_metadata'))).toBe(true);
      from = taken.path!;
      running.delete(id);
    }
  });

  test('a savepoint restored into a changed topology (an operator added, a stage renamed, another key group count) is refused with SPW_ERR_SAVEPOINT_MISMATCH; allowNonRestoredState runs it, the changed stage starting afresh and the source where it was', async () => {
    const input = path.join(work, 'changed-in');
    fs.mkdirSync(input);
    const before = lines(0, 1000, 11);
    const { path: saved } = await countAndStop(await uploadModule(url, countingModule()), input, 'first', before);
    const added = await uploadModule(url, countingModule({ extra: '.map((row) => row)' }));
    const renamed = await uploadModule(url, countingModule({ stage: 'tally' }));
    for (const module of [added, renamed]) {
      const refused = await failure(submit({ module, params: { input }, parallelism: 2, checkpoints: SAVEPOINTS_ONLY, savepoint: saved }));
      expect(refused.status).toBe(400);
      expect(refused.code).toBe('SPW_ERR_SAVEPOINT_MISMATCH');
    }
    const otherKeyGroups = path.join(work, 'savepoints', 'other-key-groups');
    fs.cpSync(saved, otherKeyGroups, { recursive: true });
    rewriteMetadata(otherKeyGroups, (metadata) => void (metadata.fingerprint.maxParallelism = 64));
    const regrouped = await failure(submit({ module: await uploadModule(url, countingModule()), params: { input }, parallelism: 2, checkpoints: SAVEPOINTS_ONLY, savepoint: otherKeyGroups }));
    expect(regrouped.code).toBe('SPW_ERR_SAVEPOINT_MISMATCH');

    // Allowed: the count stage changed, its state is dropped; the source's is kept, so the first file is not read again.
    const after = lines(1000, 500, 11);
    const { id } = await countAndStop(added, input, 'second', after, { savepoint: saved, allowNonRestoredState: true });
    expect(sortRows(await result<[string, number]>(url, id))).toEqual(expectedRows(new Map(), keyCounts(after)));
  });

  test('a savepoint or stop asked while the job restarts answers 409 SPW_ERR_JOB_RESTARTING; asked again once it runs, it completes, and the job stops with every record counted once', async () => {
    const input = path.join(work, 'restarting-in');
    fs.mkdirSync(input);
    const module = await uploadModule(url, countingModule());
    const failOnce = path.join(work, 'restarting-failed-once');
    const restart = { strategy: 'fixed-delay', attempts: 3, delayMs: 3000 };
    const id = await submit({ module, params: { input, failOnce }, parallelism: 2, checkpoints: { interval: 100 }, restart });
    await waitRunning(url, id);
    const content = [...lines(0, 1000, 13), 'boom', ...lines(1000, 1000, 13)];
    drop(input, 'with-boom', content);
    await waitUntil(url, id, (job) => job.restarts >= 1, 'a restart');
    const directory = path.join(work, 'savepoints');
    for (const route of ['savepoints', 'stop']) {
      const refused = await failure(callJson('POST', `${url}/jobs/${id}/${route}`, { directory }));
      expect(refused.status, route).toBe(409);
      expect(refused.code, route).toBe('SPW_ERR_JOB_RESTARTING');
    }
    // Asked again, as the answer says, until the restarted job takes it.
    const taken = await eventually(
      'the restarted job takes the savepoint',
      () =>
        savepoint(url, id, directory, true).catch((error: unknown) => {
          if (error instanceof HttpError && error.code === 'SPW_ERR_JOB_RESTARTING') return undefined;
          throw error;
        }),
      { everyMs: 100 },
    );
    expect(taken.status, taken.failure).toBe('COMPLETED');
    const status = await waitFor(url, id, 20_000);
    expect(status.state, status.error).toBe(JobState.FINISHED);
    expect(sortRows(await result<[string, number]>(url, id))).toEqual(expectedRows(new Map(), keyCounts(content)));
  });
});

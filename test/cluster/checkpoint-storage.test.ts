import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import type { CheckpointStats } from '../../src/jobmanager/checkpoint/CheckpointStats.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson, streamLines } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { waitUntil } from '../helpers/failover.js';
import { cancelAll, failure, result, submitJob, uploadModule, waitFor, waitRunning } from '../helpers/jobs.js';
import { countingModule, drop, FAIL_ONCE, expectedRows, keyCounts, lines, savepoint, sortRows, waitRecordsIn } from '../helpers/keyedCounts.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-checkpoint-storage-'));
const checkpointDir = path.join(work, 'checkpoints');
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const test = clusterTest({ taskManagers: 2, slots: 2, extraArgs: ['--checkpoint-dir', checkpointDir, '--cancel-timeout', '5000'] }, { leakCheck: true });

/** The cheapest job that checkpoints a source and a sink: one task, a monitored folder copied into a text sink's folder. */
const COPY_MODULE = `import fs from 'node:fs';
import { JobBuilder } from 'spillway';
export default (params) => {
  const job = new JobBuilder('copy');
  job
    .readText(params.input, { monitor: 20 })
    .map((line) => {
      ${FAIL_ONCE}
      return line;
    })
    .writeText(params.output);
  return job.build();
};
`;

let url: string;
let counting: string;
test.beforeAll(async ({ cluster }) => {
  url = cluster.url;
  counting = await uploadModule(url, countingModule());
});

const running = new Set<string>();
test.afterEach(() => cancelAll(url, running));

/** Submits a job, canceled after the test unless it ended (one accepted that should not have been too). */
const submit = (body: Record<string, unknown>): Promise<string> => submitJob(url, body).then((id) => (running.add(id), id));

interface CheckpointsView {
  counts: { completed: number; failed: number; inProgress: number };
  checkpoints: CheckpointStats[];
  latest?: CheckpointStats;
}

const checkpoints = (id: string): Promise<CheckpointsView> => callJson<CheckpointsView>('GET', `${url}/jobs/${id}/checkpoints`);

interface JobException {
  task: string;
  code: string;
}

const exceptions = async (id: string): Promise<JobException[]> => (await callJson<{ exceptions: JobException[] }>('GET', `${url}/jobs/${id}/exceptions`)).exceptions;

/** Waits until checkpoints of `id` have completed past `after` (the latest's id then); the latest. */
async function checkpointsPast(id: string, after: number, timeoutMs = 20_000): Promise<CheckpointStats> {
  let latest: CheckpointStats | undefined;
  return eventually(
    () => `job ${id}: a checkpoint past ${after} completed (latest ${latest?.id})`,
    async () => {
      ({ latest } = await checkpoints(id));
      return latest !== undefined && latest.id > after && latest;
    },
    { timeoutMs, everyMs: 20 },
  );
}

/** Follows a job's committed result until it holds `count` rows (the follow ends with the job). */
async function waitCommitted(id: string, count: number, timeoutMs = 30_000): Promise<void> {
  let rows = 0;
  void streamLines(`${url}/jobs/${id}/result?follow=true`, () => void rows++).catch(() => undefined);
  await eventually(() => `job ${id}: ${count} rows committed (${rows} so far)`, () => rows >= count, { timeoutMs, everyMs: 50 });
}

/** Flips a byte in the middle of a file. */
function flipByte(file: string): void {
  const bytes = fs.readFileSync(file);
  bytes[bytes.length >> 1] ^= 0xff;
  fs.writeFileSync(file, bytes);
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[]).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

describe('checkpoint files on a cluster of 2 TaskManagers', () => {
  test('a savepoint with a state file damaged or missing, or its metadata damaged, is refused with SPW_ERR_CHECKPOINT_CORRUPT, one without metadata with SPW_ERR_SAVEPOINT_NOT_FOUND; one moved whole restores from where it is', async () => {
    const input = path.join(work, 'damaged-in');
    fs.mkdirSync(input);
    const id = await submit({ module: counting, params: { input }, parallelism: 2, checkpoints: { interval: 600_000 } });
    await waitRunning(url, id);
    const content = lines(0, 500, 7);
    drop(input, 'a', content);
    await waitRecordsIn(url, id, 'count', content.length);
    const taken = await savepoint(url, id, path.join(work, 'savepoints'), true);
    expect(taken.status, taken.failure).toBe('COMPLETED');
    expect((await waitFor(url, id, 20_000)).state).toBe(JobState.FINISHED);
    const damage: [string, (folder: string) => void, string][] = [
      ['a state file flipped', (folder) => flipByte(path.join(folder, 'count-1.state')), 'SPW_ERR_CHECKPOINT_CORRUPT'],
      ['a state file missing', (folder) => fs.rmSync(path.join(folder, 'count-0.state')), 'SPW_ERR_CHECKPOINT_CORRUPT'],
      ['its metadata flipped', (folder) => flipByte(path.join(folder, '_metadata')), 'SPW_ERR_CHECKPOINT_CORRUPT'],
      ['its metadata missing', (folder) => fs.rmSync(path.join(folder, '_metadata')), 'SPW_ERR_SAVEPOINT_NOT_FOUND'],
    ];
    for (const [what, harm, code] of damage) {
      const copy = path.join(work, 'savepoints', what.replaceAll(' ', '-'));
      fs.cpSync(taken.path!, copy, { recursive: true });
      harm(copy);
      const refused = await failure(submit({ module: counting, params: { input }, parallelism: 2, checkpoints: { interval: 600_000 }, savepoint: copy }));
      expect(refused.status, what).toBe(400);
      expect(refused.code, what).toBe(code);
    }
    // Moved elsewhere whole, the savepoint restores from its own files, where it is now.
    const moved = path.join(work, 'moved-savepoint');
    fs.renameSync(taken.path!, moved);
    const restored = await submit({ module: counting, params: { input }, parallelism: 2, checkpoints: { interval: 600_000 }, savepoint: moved });
    await waitRunning(url, restored);
    const more = lines(500, 300, 7);
    drop(input, 'b', more);
    await waitRecordsIn(url, restored, 'count', more.length);
    expect((await savepoint(url, restored, path.join(work, 'savepoints'), true)).status).toBe('COMPLETED');
    expect((await waitFor(url, restored, 20_000)).state).toBe(JobState.FINISHED);
    expect(sortRows(await result<[string, number]>(url, restored))).toEqual(expectedRows(keyCounts(content), keyCounts(more)));
  });

  test('a restart whose latest retained checkpoint turns out damaged fails that restore with SPW_ERR_CHECKPOINT_CORRUPT and restores from the older one: every record counted once', async () => {
    const input = path.join(work, 'fallback-in');
    fs.mkdirSync(input);
    const failOnce = path.join(work, 'fallback-failed-once');
    const id = await submit({
      module: counting,
      params: { input, failOnce },
      parallelism: 2,
      checkpoints: { interval: 100, retain: 2 },
      restart: { strategy: 'fixed-delay', attempts: 3, delayMs: 1500 },
    });
    await waitRunning(url, id);
    const first = lines(0, 2000, 17);
    drop(input, 'a', first);
    await waitRecordsIn(url, id, 'count', first.length);
    // Both retained checkpoints come after every record of the first file: either restores the same counts.
    const { latest } = await checkpoints(id);
    await checkpointsPast(id, (latest?.id ?? 0) + 2);
    drop(input, 'boom', ['boom']);
    await waitUntil(url, id, (job) => job.restarts >= 1, 'the first restart');
    // While the restart waits, no checkpoint is taken: the one it restores from is the latest now.
    const restoring = (await checkpoints(id)).latest!;
    for (const file of fs.readdirSync(restoring.path!).filter((name) => name.endsWith('.state'))) flipByte(path.join(restoring.path!, file));
    await waitUntil(url, id, (job) => job.restarts >= 2, 'a second restart, the damaged checkpoint refused', 20_000);
    const refused = await exceptions(id);
    expect(refused.map((e) => e.code), JSON.stringify(refused)).toContain('SPW_ERR_CHECKPOINT_CORRUPT');
    const last = lines(2000, 1000, 17);
    drop(input, 'c', last);
    const all = [...first, 'boom', ...last];
    await waitCommitted(id, all.length);
    const stopped = await savepoint(url, id, path.join(work, 'savepoints'), true);
    expect(stopped.status, stopped.failure).toBe('COMPLETED');
    const status = await waitFor(url, id, 20_000);
    expect(status.state, status.error).toBe(JobState.FINISHED);
    expect(sortRows(await result<[string, number]>(url, id))).toEqual(expectedRows(new Map(), keyCounts(all)));
  });

  test('after 1,000 checkpoints 10 ms apart the checkpoint folder holds the last `retain` alone; after a cancel, nothing of the job is left there or in progress in its output', async () => {
    const input = path.join(work, 'many-in');
    const output = path.join(work, 'many-out');
    fs.mkdirSync(input);
    const failOnce = path.join(work, 'many-failed-once');
    const retain = 3;
    const id = await submit({
      module: await uploadModule(url, COPY_MODULE),
      params: { input, output, failOnce },
      parallelism: 1,
      checkpoints: { interval: 10, retain },
      // The restart waits past the test's end (the cancel ends it): no checkpoint is taken meanwhile.
      restart: { strategy: 'fixed-delay', attempts: 1, delayMs: 600_000 },
    });
    await waitRunning(url, id);
    drop(input, 'a', lines(0, 100, 5));
    await checkpointsPast(id, 999, 45_000);
    // A restart holds the checkpoints still, so that the folder can be read between two.
    drop(input, 'boom', ['boom']);
    await waitUntil(url, id, (job) => job.restarts >= 1, 'the restart');
    // The view no longer moves; the checkpoint under way at the failure is aborted, its folder removed once its task stopped writing.
    const view = await checkpoints(id);
    expect(view.counts.completed).toBeGreaterThanOrEqual(1000);
    const kept = view.checkpoints.filter((c) => c.status === 'COMPLETED').slice(-retain);
    const folder = path.join(checkpointDir, id);
    const expected = kept.map((c) => `chk-${c.id}`).sort();
    await eventually(`the folder of job ${id} holding ${expected.join(', ')} alone`, async () => (sameList(fs.readdirSync(folder).sort(), expected) ? true : undefined));
    for (const c of kept) expect(fs.readdirSync(path.join(folder, `chk-${c.id}`)).sort()).toEqual(['_metadata', 'text-0.state']);
    await callJson('POST', `${url}/jobs/${id}/cancel`, {});
    expect((await waitFor(url, id, 15_000)).state).toBe(JobState.CANCELED);
    running.delete(id);
    // The job's folder goes once its tasks stopped; its output keeps only what checkpoints committed.
    await eventually(`the folder of job ${id} removed`, async () => (fs.existsSync(folder) ? undefined : true));
    expect(filesUnder(folder)).toEqual([]);
    expect(filesUnder(checkpointDir).filter((f) => f.includes(id))).toEqual([]);
    expect(filesUnder(output).filter((f) => !/^part-\d{5}-/.test(f))).toEqual([]);
  }, 90_000);
});

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { NexmarkGenerator, type NexmarkEvent } from '../../src/connectors/nexmark/NexmarkGenerator.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson, streamLines } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { spillway } from '../helpers/command.js';
import { eventually } from '../helpers/eventually.js';
import { cancelAll, expectFinished, expectTaskManagersIdle, failure, result, submitJob, uploadModule, waitFor, waitRunning } from '../helpers/jobs.js';
import * as reference from '../helpers/nexmarkReference.js';
import { alignedSums, randomEvents, sessionSums, sortWindows, type Event, type KeyedWindow } from '../helpers/windowReference.js';
import { seededRandom } from '../../src/job/Corpus.js';

let cluster: LocalCluster;
let url: string;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-streaming-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const test = clusterTest({ taskManagers: 2, slots: 2, extraArgs: ['--cancel-timeout', '5000'] }, { leakCheck: true });

test.beforeAll(async ({ cluster: started }) => {
  cluster = started;
  url = cluster.url;
});

/** Unbounded jobs started by a test: canceled after it whatever happened, so that one failure does not hold the next test's slots. */
const running = new Set<string>();
test.afterEach(() => cancelAll(url, running));

/** A job module over a monitored folder: comma-separated `t,key,value` lines, summed per key and window of 1 s, collected. */
function streamingModule(folder: string, window: 'tumbling' | 'session'): string {
  const assigner = window === 'tumbling' ? 'tumbling(1000)' : 'session(700)';
  return `import { JobBuilder, tumbling, session } from 'spillway';
const job = new JobBuilder('stream-${window}');
job
  .readText(${JSON.stringify(folder)}, { monitor: 50 })
  .parallelism(1)
  .map((line) => { const [t, key, value] = line.split(',').map(Number); return { t, key, value }; })
  .assignTimestamps((e) => e.t, { maxOutOfOrderness: 2000, interval: 50 })
  .keyBy((e) => e.key)
  .window(${assigner})
  .aggregate({ create: () => 0, add: (acc, e) => acc + e.value, merge: (a, b) => a + b, result: (acc) => acc })
  .collect();
export default job.build();
`;
}

/** Writes a file into a watched folder as a writer should: under a hidden name, then renamed. */
function drop(folder: string, name: string, events: readonly Event[]): void {
  const hidden = path.join(folder, `.${name}`);
  fs.writeFileSync(hidden, events.map((e) => `${e.t},${e.key},${e.value}`).join('\n') + '\n');
  fs.renameSync(hidden, path.join(folder, name));
}

/** Follows a job's result (NDJSON) until `enough` holds of what came; the lines so far. */
async function follow(id: string, enough: (rows: unknown[]) => boolean): Promise<unknown[]> {
  const rows: unknown[] = [];
  const controller = new AbortController();
  const done = streamLines(`${url}/jobs/${id}/result?follow=true`, (row) => {
    rows.push(row);
    if (enough(rows)) controller.abort();
  });
  await eventually(() => `enough rows (${rows.length} so far)`, () => enough(rows), { everyMs: 50 });
  void done.catch(() => undefined);
  return rows;
}

describe('streaming jobs on a cluster of 2 TaskManagers', () => {
  test('an unbounded windowed job over a monitored folder: windows come out while it runs, exact, followed over REST; cancel ends every task and leaves nothing behind', async () => {
    const folder = path.join(work, 'in');
    fs.mkdirSync(folder);
    const events = randomEvents(seededRandom(9), 3000, 20, 30_000, 2_000);
    const id = await submitJob(url, { module: await uploadModule(url, streamingModule(folder, 'tumbling')), parallelism: 4 });
    running.add(id);
    await waitRunning(url, id);
    // Files that appear in one listing are read by modification time, then name (a coarse clock may give them all one time).
    for (let i = 0; i < 3; i++) drop(folder, `part-${i}`, events.slice(i * 1000, (i + 1) * 1000));
    drop(folder, 'part-3', [{ t: 10_000_000, key: 0, value: 1 }]);
    const expected = alignedSums(events, 1_000);
    const rows = await follow(id, (got) => got.length >= expected.length);
    expect(sortWindows(rows as KeyedWindow[])).toEqual(expected);
    // The stage's watermark, as its tasks' counters report it (each heartbeat).
    const watermark = async (): Promise<{ bounded: boolean; watermark: number | null | undefined }> => {
      const status = await callJson<{ bounded: boolean; stages: { stage: string; watermark: number | null }[] }>('GET', `${url}/jobs/${id}`);
      return { bounded: status.bounded, watermark: status.stages.find((s) => s.stage === 'window')?.watermark };
    };
    let seen = await watermark();
    await eventually(() => `the window stage's watermark at 30000 (${seen.watermark})`, async () => ((seen = await watermark()).watermark ?? 0) >= 30_000, { everyMs: 200 });
    expect(seen.bounded).toBe(false);
    await callJson('POST', `${url}/jobs/${id}/cancel`, {});
    // Every task ended (past the cancel timeout a task is abandoned, and the job still ends CANCELED).
    const end = await waitFor(url, id);
    expect(end.state).toBe(JobState.CANCELED);
    await expectTaskManagersIdle(url);
    // The cluster runs the next job.
    const next = await submitJob(url, { job: 'nexmark-q2', params: { events: 5000 }, parallelism: 2 });
    await expectFinished(url, next);
  });

  test('session windows at parallelism 4 across both TaskManagers equal the reference', async () => {
    const folder = path.join(work, 'sessions');
    fs.mkdirSync(folder);
    const events = randomEvents(seededRandom(10), 2000, 15, 40_000, 1_500);
    const id = await submitJob(url, { module: await uploadModule(url, streamingModule(folder, 'session')), parallelism: 4 });
    running.add(id);
    await waitRunning(url, id);
    drop(folder, 'a', events.slice(0, 1000));
    drop(folder, 'b', events.slice(1000));
    drop(folder, 'c', [{ t: 10_000_000, key: 0, value: 1 }]);
    const expected = sessionSums(events, 700);
    const rows = await follow(id, (got) => got.length >= expected.length);
    expect(sortWindows(rows as KeyedWindow[])).toEqual(expected);
    await callJson('POST', `${url}/jobs/${id}/cancel`, {});
    expect((await waitFor(url, id, 10_000)).state).toBe(JobState.CANCELED);
  });

  test('nexmark-q5 and q11 over REST at parallelism 4 equal the reference', async () => {
    const generator = new NexmarkGenerator({ events: 20_000, seed: 3 });
    const events: NexmarkEvent[] = [];
    for (let e = generator.next(); e !== null; e = generator.next()) events.push(e);
    for (const q of ['q5', 'q11'] as const) {
      const id = await submitJob(url, { job: `nexmark-${q}`, params: { events: 20_000, seed: 3 }, parallelism: 4 });
      await expectFinished(url, id);
      expect(reference.sortRows((await result(url, id)) as never), q).toEqual(reference[q](events));
    }
  });

  test('spillway submit --follow prints the records as JSON lines after its first line, and exits 0 once the job finished', async () => {
    const run = await spillway('submit', 'nexmark-q2', '--jobmanager', url, '--param', 'events=20000', '--param', 'seed=1', '--follow');
    expect(run.code, run.stderr).toBe(0);
    const [first, ...lines] = run.stdout.trim().split('\n');
    expect(first).toMatch(/^submitted job-/);
    const generator = new NexmarkGenerator({ events: 20_000, seed: 1 });
    const events: NexmarkEvent[] = [];
    for (let e = generator.next(); e !== null; e = generator.next()) events.push(e);
    expect(reference.sortRows(lines.map((l) => JSON.parse(l)))).toEqual(reference.q2(events));
  });

  test('an unbounded job with a blocking exchange, or a reduce that waits for the end, is refused with SPW_ERR_UNBOUNDED_JOB', async () => {
    const error = await failure(submitJob(url, { job: 'nexmark-q5', params: {}, parallelism: 2, exchange: 'blocking' }));
    expect(error.status).toBe(400);
    expect(error.code).toBe('SPW_ERR_UNBOUNDED_JOB');
    const reducing = `import { JobBuilder } from 'spillway';
const job = new JobBuilder('never');
job.nexmark({}).keyBy((e) => e.type).reduce((a) => a).collect();
export default job.build();`;
    const refused = await failure(submitJob(url, { module: await uploadModule(url, reducing), parallelism: 2 }));
    expect(refused.code).toBe('SPW_ERR_UNBOUNDED_JOB');
  });
});

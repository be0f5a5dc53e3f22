/**
 * Unaligned checkpoints' channel state across processes (issue 29): a checkpoint taken
 * while buffers are queued in a producer's subpartitions and in flight to a consumer on
 * another TaskManager stores them; after a SIGKILL, the restored job reads them again, in
 * order, before any new input. Dropped channel state shows as holes, replayed it late as
 * records out of order.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import { CheckpointStatus } from '../../src/jobmanager/checkpoint/CheckpointStats.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { checkpointsOf, completedCheckpoint } from '../helpers/checkpoints.js';
import { clusterTest } from '../helpers/cluster.js';
import { killHard, processOf, waitUntil, type JobDetails } from '../helpers/failover.js';
import { result, submitJob, uploadModule, waitFor } from '../helpers/jobs.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-channel-state-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

// One slot each: the two subtasks of every stage run on different TaskManagers, so each source feeds one local and one remote channel.
const test = clusterTest({
  taskManagers: 2,
  slots: 1,
  memory: '16mb',
  bufferSize: '4kb',
  heartbeatTimeoutMs: 8000,
  jobManagerArgs: ['--restart-attempts', '10', '--restart-delay', '200'],
});

const PER_SOURCE = 12_000;
const KEYS = 64;
const SINK_RATE = 2_000;

/**
 * Each source subtask yields [subtask, i, padding] for i in 0..PER_SOURCE, hashed by i % KEYS
 * to sinks that let SINK_RATE records a second through (sleeping their thread): every buffer
 * between them fills. What a sink collects is [subtask, i].
 */
const BACKPRESSURED = `import { JobBuilder } from 'spillway';
const padding = 'x'.repeat(200);
const cell = new Int32Array(new SharedArrayBuffer(4));
let due = 0;
function throttle(record) {
  const now = performance.now();
  due = Math.max(due, now - 50) + ${1000 / SINK_RATE};
  if (due - now >= 1) Atomics.wait(cell, 0, 0, due - now);
  return [record[0], record[1]];
}
const job = new JobBuilder('channel-state');
job
  .generate(function* (subtask) { for (let i = 0; i < ${PER_SOURCE}; i++) yield [subtask, i, padding]; })
  .partitionByHash((record) => record[1] % ${KEYS})
  .map(throttle)
  .collect();
export default job.build();`;

/**
 * A channel carries one source subtask's records of the keys one sink owns, and a sink's
 * collected records keep its arrival order: each (source, key) group must be every i of
 * that key, ascending.
 */
function expectEachChannelExact(records: readonly [number, number][]): void {
  const groups = new Map<string, number[]>();
  for (const [subtask, i] of records) {
    const group = `${subtask}/${i % KEYS}`;
    groups.set(group, [...(groups.get(group) ?? []), i]);
  }
  for (let subtask = 0; subtask < 2; subtask++) {
    for (let key = 0; key < KEYS; key++) {
      const expected = Array.from({ length: Math.ceil((PER_SOURCE - key) / KEYS) }, (_, n) => key + n * KEYS);
      expect(groups.get(`${subtask}/${key}`), `source ${subtask}, key ${key}: every record once, in order`).toEqual(expected);
    }
  }
  expect(records.length).toBe(2 * PER_SOURCE);
}

test('an unaligned checkpoint under backpressure stores what is queued and in flight on a remote channel; after a SIGKILL those records come back first, in order, none lost or twice', async ({ cluster }) => {
  const url = cluster.url;
  const module = await uploadModule(url, BACKPRESSURED);
  const id = await submitJob(url, {
    module,
    parallelism: 2,
    checkpoints: { interval: 500, mode: 'unaligned', timeout: 5000, tolerableFailures: 100, retain: 2, directory: path.join(work, 'checkpoints') },
  });
  const stored = await completedCheckpoint(url, id, (c) => c.inFlightBytes > 0);
  expect(stored.unaligned).toBe(true);

  // Subtask 0 of each stage goes: a checkpoint needs every task's part, so none completes after.
  const running = await waitUntil(url, id, (j) => j.tasks.every((t) => t.state === 'RUNNING'), 'every task running');
  const victim = running.tasks.find((t) => t.subtask === 0)!.taskManager;
  const child = await processOf(url, victim, cluster.processes);
  await killHard(child);
  const before = (await checkpointsOf(url, id)).checkpoints.filter((c) => c.status === CheckpointStatus.COMPLETED);
  expect(before.every((c) => c.inFlightBytes > 0 && c.unaligned), 'whichever checkpoint the job restores holds channel state').toBe(true);
  cluster.addTaskManager();

  const status = await waitFor(url, id, 90_000);
  expect(status.state, status.error).toBe('FINISHED');
  expect((await callJson<JobDetails>('GET', `${url}/jobs/${id}`)).restarts).toBeGreaterThanOrEqual(1);
  expectEachChannelExact(await result<[number, number]>(url, id));
}, 120_000);

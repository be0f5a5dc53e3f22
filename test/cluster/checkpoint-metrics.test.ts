import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { CheckpointStatus, type CheckpointStats } from '../../src/jobmanager/checkpoint/CheckpointStats.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { checkpointsOf, completedCheckpoint } from '../helpers/checkpoints.js';
import { eventually } from '../helpers/eventually.js';
import { clusterTest } from '../helpers/cluster.js';
import { submitJob, uploadModule, waitFor, waitRunning } from '../helpers/jobs.js';
import { scrape, sum, type Family } from '../helpers/prometheus.js';

// The cluster's --checkpoint-dir: the jobs below name none of their own.
const checkpointDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-checkpoint-metrics-'));
// Small buffers: an unaligned checkpoint completes once its task has read the buffers its barrier overtook, a few seconds' worth here.
const test = clusterTest({ taskManagers: 2, slots: 2, memory: '16mb', bufferSize: '4kb', extraArgs: ['--checkpoint-dir', checkpointDir] });

afterAll(() => fs.rmSync(checkpointDir, { recursive: true, force: true }));

// A trigger lost at a task's start would hold its checkpoint until the timeout: a short one, tolerated, keeps them coming.
const CHECKPOINTS = { interval: 200, timeout: 10_000, tolerableFailures: 10 };

// Nexmark at 4000 events a second, rebalanced to maps that spend 1 ms on each event: the buffers between them fill up.
const BACKPRESSURED = `import { JobBuilder } from 'spillway';
const job = new JobBuilder('backpressured');
job.nexmark({ rate: 4000 }).rebalance().map((e) => { const end = Date.now() + 1; while (Date.now() < end); return e; }).discard();
export default job.build();`;

/** A job's series of `family` on the JobManager; undefined if it has none. */
function seriesOf(families: Map<string, Family>, name: string, job: string): number | undefined {
  const family = families.get(name);
  return family?.metrics.some((m) => m.labels?.job === job) ? sum(family, { job }) : undefined;
}

/** The JobManager's checkpoint series of a job, by name without the `spillway_job_` prefix. */
async function checkpointSeries(url: string, job: string): Promise<Record<string, number | undefined>> {
  const families = await scrape(url);
  const names = ['checkpoints_completed_total', 'checkpoints_failed_total', 'checkpoints_in_progress', 'last_checkpoint_id', 'last_checkpoint_duration_seconds', 'last_checkpoint_size_bytes',
    'last_checkpoint_alignment_seconds', 'last_checkpoint_start_delay_seconds', 'last_checkpoint_persisted_in_flight_bytes', 'last_checkpoint_unaligned'];
  return Object.fromEntries(names.map((name) => [name, seriesOf(families, `spillway_job_${name}`, job)]));
}

/** The checkpoint the series' last_checkpoint_id names, as the REST API shows it: its figures are the series'. */
async function expectSeriesOfRest(url: string, job: string, series: Record<string, number | undefined>): Promise<CheckpointStats> {
  const shown = (await checkpointsOf(url, job)).checkpoints.find((c) => c.id === series.last_checkpoint_id);
  expect(shown, `checkpoint ${series.last_checkpoint_id} is in GET /jobs/${job}/checkpoints`).toBeDefined();
  expect(shown!.status).toBe(CheckpointStatus.COMPLETED);
  expect(series.last_checkpoint_size_bytes).toBe(shown!.bytes);
  expect(series.last_checkpoint_duration_seconds).toBe(shown!.durationMs! / 1000);
  expect(series.last_checkpoint_alignment_seconds).toBeCloseTo(Math.max(...Object.values(shown!.tasks).map((t) => t.alignmentMs)) / 1000, 9);
  expect(series.last_checkpoint_start_delay_seconds).toBeCloseTo(Math.max(...Object.values(shown!.tasks).map((t) => t.startDelayMs)) / 1000, 9);
  expect(series.last_checkpoint_persisted_in_flight_bytes).toBe(shown!.inFlightBytes);
  expect(series.last_checkpoint_unaligned).toBe(shown!.unaligned ? 1 : 0);
  return shown!;
}

async function cancel(url: string, id: string): Promise<void> {
  await callJson('POST', `${url}/jobs/${id}/cancel`, {}).catch(() => undefined);
  await waitFor(url, id);
}

describe('checkpoints on /metrics and GET /jobs/:id/checkpoints', () => {
  test('aligned: the completed counter grows, the last checkpoint series are those of a completed checkpoint the REST API shows, and they outlive the job', async ({ cluster }) => {
    const url = cluster.url;
    const id = await submitJob(url, { job: 'nexmark-q5', params: { rate: 2000, sink: 'discard' }, parallelism: 2, checkpoints: CHECKPOINTS });
    try {
      await waitRunning(url, id);
      const { tasks } = await callJson<{ tasks: { id: string }[] }>('GET', `${url}/jobs/${id}`);
      await completedCheckpoint(url, id, (c) => c.id >= 2);
      const first = await eventually('a last checkpoint on /metrics', async () => {
        const series = await checkpointSeries(url, id);
        return series.last_checkpoint_id === undefined ? undefined : series;
      });
      expect(first.checkpoints_completed_total, 'the counter counts what the REST API counted').toBeGreaterThanOrEqual(1);
      expect([0, 1]).toContain(first.checkpoints_in_progress);
      expect(first.last_checkpoint_size_bytes, "every task's state file has bytes").toBeGreaterThan(0);
      expect(first.last_checkpoint_unaligned, 'an aligned job takes aligned checkpoints').toBe(0);
      expect(first.last_checkpoint_persisted_in_flight_bytes, 'aligned, nothing in flight is stored').toBe(0);
      const shown = await expectSeriesOfRest(url, id, first);
      expect(Object.keys(shown.tasks).sort(), 'every task of the job acknowledged it').toEqual(tasks.map((t) => t.id).sort());
      for (const task of Object.values(shown.tasks)) {
        expect(task.unaligned).toBe(false);
        expect(task.inFlightBytes).toBe(0);
        expect(task.bytes).toBeGreaterThan(0);
      }
      expect(shown.bytes, "the checkpoint's size is its tasks' state").toBe(Object.values(shown.tasks).reduce((s, t) => s + t.bytes, 0));

      const later = await eventually('the completed counter growing', async () => {
        const series = await checkpointSeries(url, id);
        return series.checkpoints_completed_total! > first.checkpoints_completed_total! ? series : undefined;
      });
      expect(later.last_checkpoint_id, 'the last checkpoint is a newer one').toBeGreaterThan(first.last_checkpoint_id!);
      await expectSeriesOfRest(url, id, later);
    } finally {
      await cancel(url, id);
    }
    // Ended: the series stay for the metrics retention, and the REST view keeps the counts and the latest from the job's record.
    const ended = await checkpointsOf(url, id);
    const series = await checkpointSeries(url, id);
    expect(ended.counts.inProgress).toBe(0);
    expect(series.checkpoints_completed_total).toBe(ended.counts.completed);
    expect(series.checkpoints_failed_total).toBe(ended.counts.failed);
    expect(series.checkpoints_in_progress).toBe(0);
    expect(ended.latest?.id).toBe(series.last_checkpoint_id);
    expect(ended.checkpoints.map((c) => c.id)).toContain(ended.latest!.id);
  }, 90_000);

  test('unaligned under backpressure: every task takes it unaligned, the in-flight buffers it stored are counted, and the series say so', async ({ cluster }) => {
    const url = cluster.url;
    const id = await submitJob(url, { module: await uploadModule(url, BACKPRESSURED), parallelism: 2, checkpoints: { ...CHECKPOINTS, mode: 'unaligned' } });
    try {
      const stored = await completedCheckpoint(url, id, (c) => c.inFlightBytes > 0);
      expect(stored.unaligned).toBe(true);
      const tasks = Object.values(stored.tasks);
      expect(tasks.every((t) => t.unaligned), 'every task took it unaligned').toBe(true);
      expect(tasks.reduce((s, t) => s + t.inFlightBytes, 0), "the checkpoint's in-flight bytes are its tasks'").toBe(stored.inFlightBytes);
      const series = await eventually('an unaligned last checkpoint with in-flight bytes on /metrics', async () => {
        const s = await checkpointSeries(url, id);
        return s.last_checkpoint_persisted_in_flight_bytes! > 0 ? s : undefined;
      });
      expect(series.last_checkpoint_unaligned).toBe(1);
      await expectSeriesOfRest(url, id, series);
    } finally {
      await cancel(url, id);
    }
  }, 90_000);

  test('checkpoints that time out are counted failed, with the reason; none completed, so no last checkpoint series', async ({ cluster }) => {
    const url = cluster.url;
    const id = await submitJob(url, { job: 'nexmark-q0', params: { rate: 1000, sink: 'discard' }, parallelism: 1, checkpoints: { interval: 100, timeout: 1, tolerableFailures: 1_000_000 } });
    try {
      const series = await eventually('three failed checkpoints on /metrics', async () => {
        const s = await checkpointSeries(url, id);
        return (s.checkpoints_failed_total ?? 0) >= 3 ? s : undefined;
      });
      expect(series.checkpoints_completed_total).toBe(0);
      expect(series.last_checkpoint_id).toBeUndefined();
      const view = await checkpointsOf(url, id);
      expect(view.counts.completed).toBe(0);
      expect(view.counts.failed).toBeGreaterThanOrEqual(3);
      expect(view.latest).toBeUndefined();
      const failed = view.checkpoints.filter((c) => c.status === CheckpointStatus.FAILED);
      expect(failed.length).toBeGreaterThanOrEqual(3);
      expect(failed[0].failure).toContain('longer than 1 ms');
      expect((await callJson<{ state: string }>('GET', `${url}/jobs/${id}`)).state, 'tolerated failures do not fail the job').toBe('RUNNING');
    } finally {
      await cancel(url, id);
    }
  }, 60_000);
});

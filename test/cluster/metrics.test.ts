import { describe, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { expectFinished, submitJob } from '../helpers/jobs.js';
import { scrape, sum, taskManagerUrls, type Family } from '../helpers/prometheus.js';

const RETENTION_MS = 3000;
const RECORDS = 20_000;

let cluster: LocalCluster;
let url: string;

const test = clusterTest({ taskManagers: 2, slots: 1, memory: '64mb', extraArgs: ['--metrics-retention', String(RETENTION_MS)] });

test.beforeAll(async ({ cluster: started }) => {
  cluster = started;
  url = cluster.url;
}, 60_000);


function expectFamily(families: Map<string, Family>, name: string, type: Family['type']): Family {
  const family = families.get(name);
  expect(family, `${name} is exposed`).toBeDefined();
  expect(family!.type, `${name} is a ${type.toLowerCase()}`).toBe(type);
  if (type === 'COUNTER') expect(name, 'counters end in _total').toMatch(/_total$/);
  return family!;
}

const TASK_COUNTERS = [
  'spillway_task_busy_seconds_total',
  'spillway_task_backpressured_seconds_total',
  'spillway_task_idle_seconds_total',
  'spillway_task_records_in_total',
  'spillway_task_records_out_total',
  'spillway_task_bytes_in_total',
  'spillway_task_bytes_out_total',
];

describe('/metrics', () => {
  test('the JobManager and every TaskManager serve Prometheus text with the spillway_ metrics and the process defaults', async () => {
    const id = await submitJob(url, { job: 'synthetic', params: { records: RECORDS, recordSize: 50, keys: 500 }, parallelism: 2 });
    const job = await callJson<{ counters: { recordsOut: number; recordsIn: number }; edges: { records: number }[] }>(
      'GET',
      `${url}/jobs/${(await expectFinished(url, id)).id}`,
    );
    const jm = await scrape(url);
    expectFamily(jm, 'process_cpu_seconds_total', 'COUNTER');
    const jobs = expectFamily(jm, 'spillway_jobs', 'GAUGE');
    expect(sum(jobs, { state: 'FINISHED' })).toBe(1);
    expect(sum(expectFamily(jm, 'spillway_job_state', 'GAUGE'), { job: id, state: 'FINISHED' })).toBe(1);
    expect(sum(expectFamily(jm, 'spillway_job_restarts_total', 'COUNTER'), { job: id }), 'a job that never failed was not restarted').toBe(0);

    let recordsOut = 0;
    let recordsIn = 0;
    let remoteSent = 0;
    let remoteReceived = 0;
    for (const tm of await taskManagerUrls(url)) {
      const families = await scrape(tm);
      expectFamily(families, 'process_resident_memory_bytes', 'GAUGE');
      for (const name of TASK_COUNTERS) expectFamily(families, name, 'COUNTER');
      const buffers = expectFamily(families, 'spillway_network_buffers', 'GAUGE');
      expect(buffers.metrics.map((m) => m.labels?.state).sort()).toEqual(['available', 'used']);
      expect(sum(buffers), 'used + available is the network memory in buffers').toBe((64 << 20) / (32 << 10));
      expectFamily(families, 'spillway_network_pool_usage_ratio', 'GAUGE');
      expectFamily(families, 'spillway_network_credit_wait_seconds_total', 'COUNTER');
      expectFamily(families, 'spillway_spilled_bytes_total', 'COUNTER');
      expectFamily(families, 'spillway_spill_files_total', 'COUNTER');
      expectFamily(families, 'spillway_network_connections', 'GAUGE');
      const sent = expectFamily(families, 'spillway_network_sent_bytes_total', 'COUNTER');
      const received = expectFamily(families, 'spillway_network_received_bytes_total', 'COUNTER');
      expect(sent.metrics.map((m) => m.labels?.locality).sort()).toEqual(['local', 'remote']);
      remoteSent += sum(sent, { locality: 'remote' });
      remoteReceived += sum(received, { locality: 'remote' });
      recordsOut += sum(families.get('spillway_task_records_out_total'), { job: id });
      recordsIn += sum(families.get('spillway_task_records_in_total'), { job: id });
      const busy = sum(families.get('spillway_task_busy_seconds_total'), { job: id });
      expect(busy, 'the tasks of the job were busy some of the time').toBeGreaterThan(0);
    }
    // The same counts as the REST API's, from the same reports: nothing lost or counted twice.
    expect(recordsOut).toBe(job.counters.recordsOut);
    expect(recordsIn).toBe(job.counters.recordsIn);
    expect(job.edges.reduce((s, e) => s + e.records, 0)).toBe(job.counters.recordsOut);
    expect(remoteSent, 'two TaskManagers exchanged data').toBeGreaterThan(0);
    expect(remoteReceived, 'every byte sent remotely was received').toBe(remoteSent);
  }, 60_000);

  test('label counts stay bounded after 50 jobs: an ended job series goes after the retention', async () => {
    const ids: string[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const submitted = await Promise.all(
        Array.from({ length: 5 }, () => submitJob(url, { job: 'synthetic', params: { records: 2000, recordSize: 20, keys: 50 }, parallelism: 2 })),
      );
      for (const id of submitted) await expectFinished(url, id);
      ids.push(...submitted);
    }
    const seriesOf = async (): Promise<{ jobs: Set<string>; jobStates: number }> => {
      const jobs = new Set<string>();
      for (const tm of await taskManagerUrls(url)) {
        const families = await scrape(tm);
        for (const name of TASK_COUNTERS) for (const m of families.get(name)?.metrics ?? []) jobs.add(m.labels!.job);
      }
      return { jobs, jobStates: (await scrape(url)).get('spillway_job_state')?.metrics.length ?? 0 };
    };
    const before = await seriesOf();
    expect(before.jobs.size, 'recent jobs are still there within the retention').toBeGreaterThan(0);
    let after = before;
    await eventually('the series of ended jobs dropped past their retention', async () => {
      after = await seriesOf();
      return after.jobStates === 0 && [...after.jobs].every((job) => !ids.includes(job));
    }, { everyMs: 200 });
    expect([...after.jobs].filter((job) => ids.includes(job)), 'no task series of an ended job past its retention').toEqual([]);
    expect(after.jobStates, 'no job state series past the retention').toBe(0);
    const jm = await scrape(url);
    expect(sum(jm.get('spillway_jobs'), { state: 'FINISHED' }), 'the job counts stay').toBe(51);
  }, 120_000);
});

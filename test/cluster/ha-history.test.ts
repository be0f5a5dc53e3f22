/**
 * High availability (issue 39): GET /jobs and /jobs/:id on a new leader list every job of
 * the cluster with its final state, those that ended under an earlier leader too (from the
 * job result store), even where the new leader's own data dir says otherwise: a JobManager
 * restarted while another led keeps the jobs it had as FAILED "JobManager restarted".
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { killHard } from '../helpers/failover.js';
import { awaitLeader, haCluster, haTest, roles } from '../helpers/ha.js';
import { jobStatus, submitJob, uploadModule, waitFor, waitRunning } from '../helpers/jobs.js';

/** Every line of the files in `input`, watched (unbounded) or read once (bounded), written into `output`. */
function copyModule(name: string, input: string, output: string, watched: boolean): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder(${JSON.stringify(name)});
job.readText(${JSON.stringify(input)}${watched ? ', { monitor: 200 }' : ''}).writeText(${JSON.stringify(output)});
export default job.build();
`;
}

/** GET /jobs as far as the test reads it: each job's id, name and state. */
async function listed(url: string): Promise<{ id: string; name: string; state: string }[]> {
  const { jobs } = await callJson<{ jobs: { id: string; name: string; state: string }[] }>('GET', `${url}/jobs`);
  return jobs.map(({ id, name, state }) => ({ id, name, state }));
}

haTest('a new leader lists every job of the cluster with its final state, those ended under an earlier leader too', async ({ postgres, onTestFinished }) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-ha-history-'));
  onTestFinished(() => fs.rmSync(work, { recursive: true, force: true }));
  fs.mkdirSync(path.join(work, 'in'));
  fs.writeFileSync(path.join(work, 'in', 'part-0.txt'), 'a\nb\nc\n');
  const cluster = await haCluster(postgres.url, onTestFinished);

  // Under the first leader: a bounded job finishes, a streaming one runs on.
  const first = await awaitLeader(cluster);
  const url0 = cluster.jobManagerUrls[first];
  const bounded = await submitJob(url0, { module: await uploadModule(url0, copyModule('ha-bounded', path.join(work, 'in'), path.join(work, 'out-b'), false)), parallelism: 1 });
  expect((await waitFor(url0, bounded, 60_000)).state).toBe(JobState.FINISHED);
  const streaming = await submitJob(url0, { module: await uploadModule(url0, copyModule('ha-streaming', path.join(work, 'in'), path.join(work, 'out-s'), true)), parallelism: 1 });
  await waitRunning(url0, streaming);

  // The second leader never ran the bounded job: it lists it from the result store; it cancels the streaming one.
  await killHard(cluster.jobManagerProcess(first));
  const second = await awaitLeader(cluster, first);
  const url1 = cluster.jobManagerUrls[second];
  await waitRunning(url1, streaming);
  expect(await listed(url1)).toEqual([
    { id: bounded, name: 'ha-bounded', state: JobState.FINISHED },
    { id: streaming, name: 'ha-streaming', state: JobState.RUNNING },
  ]);
  expect((await jobStatus(url1, bounded)).state).toBe(JobState.FINISHED);
  await callJson('POST', `${url1}/jobs/${streaming}/cancel`, {});
  expect((await waitFor(url1, streaming, 30_000)).state).toBe(JobState.CANCELED);

  // The first, restarted, keeps the streaming job as FAILED "JobManager restarted" in its data dir; leading again, it shows it CANCELED.
  await cluster.restartHaJobManager(first);
  expect((await roles(url0)).role).toBe('standby');
  await killHard(cluster.jobManagerProcess(second));
  expect(await awaitLeader(cluster, second)).toBe(first);
  expect(await listed(url0)).toEqual([
    { id: bounded, name: 'ha-bounded', state: JobState.FINISHED },
    { id: streaming, name: 'ha-streaming', state: JobState.CANCELED },
  ]);
  const canceled = await jobStatus(url0, streaming);
  expect([canceled.state, canceled.errorCode]).toEqual([JobState.CANCELED, undefined]);
  // The job it ran to its end itself is as it left it, collected output and all.
  expect((await jobStatus(url0, bounded)).state).toBe(JobState.FINISHED);
}, 120_000);

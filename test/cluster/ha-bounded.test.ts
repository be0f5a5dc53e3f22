/**
 * High availability (issue 39): a bounded job without checkpoints, its leader killed mid-run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { eventually } from '../helpers/eventually.js';
import { killHard, type JobDetails } from '../helpers/failover.js';
import { awaitLeader, haCluster } from '../helpers/ha.js';
import { submitJob, uploadModule } from '../helpers/jobs.js';
import { postgresScope } from '../helpers/services.js';

/** A bounded job: every line of `input`, each after a little work (so that it runs for seconds), written with writeText into `output`. */
function slowCopyModule(input: string, output: string): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder('ha-copy');
job
  .readText(${JSON.stringify(input)})
  .map((line) => { const until = performance.now() + 1; while (performance.now() < until); return line; })
  .writeText(${JSON.stringify(output)});
export default job.build();
`;
}

test('a bounded job without checkpoints, its leader SIGKILLed mid-run: the new leader runs it again, and its output is complete and not doubled', async ({ onTestFinished }) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-ha-bounded-'));
  onTestFinished(() => fs.rmSync(work, { recursive: true, force: true }));
  const schema = await postgresScope(onTestFinished);
  const cluster = await haCluster(schema.url, onTestFinished);
  const input = path.join(work, 'in');
  const output = path.join(work, 'out');
  fs.mkdirSync(input);
  const lines: string[] = [];
  for (let f = 0; f < 2; f++) {
    const part = Array.from({ length: 3000 }, (_, i) => `line ${f}-${i}`);
    lines.push(...part);
    fs.writeFileSync(path.join(input, `part-${f}.txt`), part.join('\n') + '\n');
  }
  const leader = await awaitLeader(cluster);
  const url = cluster.jobManagerUrls[leader];
  const id = await submitJob(url, { module: await uploadModule(url, slowCopyModule(input, output)), parallelism: 2 });
  // Killed once every task runs: the job is under way.
  await eventually(`job ${id}: every task running`, async () => {
    const running = await callJson<JobDetails>('GET', `${url}/jobs/${id}`);
    expect(running.state, `job ${id}: ${running.error ?? ''}`).toBe(JobState.RUNNING);
    return running.tasks.length > 0 && running.tasks.every((task) => task.state === 'RUNNING');
  }, { timeoutMs: 30_000, everyMs: 20 });
  await killHard(cluster.jobManagerProcess(leader));
  const next = cluster.jobManagerUrls[await awaitLeader(cluster, leader)];
  let state = '';
  await eventually(() => `job ${id} finished under the new leader (${state})`, async () => {
    const job = await callJson<JobDetails>('GET', `${next}/jobs/${id}`);
    state = job.state;
    expect(job.state, `job ${id}: ${job.error ?? ''}`).not.toBe(JobState.FAILED);
    return job.state === JobState.FINISHED;
  }, { timeoutMs: 60_000, everyMs: 100 });
  const written = fs
    .readdirSync(output)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) => fs.readFileSync(path.join(output, name), 'utf8').split('\n').filter((line) => line !== ''))
    // writeText writes a string record as its JSON.
    .map((line) => JSON.parse(line) as string);
  expect(written.sort()).toEqual(lines.sort());
}, 120_000);

/**
 * High availability (issue 39): what a client sees while the leader changes. A savepoint
 * under way when the leader is SIGKILLed fails, asked of the new leader, with
 * SPW_ERR_LEADER_CHANGED; a submission during the change gets a 503 with SPW_ERR_NO_LEADER
 * and Retry-After (or, for the first moments, a 307 to the leader just killed), until the
 * new leader takes it (202) and runs it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { expect } from 'vitest';
import { JobState } from '../../src/lifecycle/JobState.js';
import { authorizationHeader, callJson, HttpError } from '../../src/rpc/HttpClient.js';
import { eventually } from '../helpers/eventually.js';
import { killHard, waitUntil } from '../helpers/failover.js';
import { awaitLeader, haCluster, haTest } from '../helpers/ha.js';
import { uploadModule, submitJob, waitRunning } from '../helpers/jobs.js';

/** A watched folder's lines, each after 200 ms of work, written into `output`: a barrier waits behind the lines before it for seconds. */
function slowModule(input: string, output: string): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder('ha-slow');
job
  .readText(${JSON.stringify(input)}, { monitor: 200 })
  .map((line) => { const until = performance.now() + 200; while (performance.now() < until); return line; })
  .writeText(${JSON.stringify(output)});
export default job.build();
`;
}

/** One POST /jobs to `url`, its redirect not followed: the status, the headers a client reads, and the body. */
async function submitOnce(url: string, body: Record<string, unknown>): Promise<{ status: number; location?: string; retryAfter?: string; answer: Record<string, unknown> }> {
  const response = await request(`${url}/jobs`, { method: 'POST', headers: { ...authorizationHeader(url), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.body.text();
  const header = (name: string): string | undefined => {
    const value = response.headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  return { status: response.statusCode, location: header('location'), retryAfter: header('retry-after'), answer: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

haTest('a leader change: a savepoint under way fails with SPW_ERR_LEADER_CHANGED; a submission gets 503 SPW_ERR_NO_LEADER with Retry-After until the new leader takes it', async ({ postgres, onTestFinished }) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-ha-change-'));
  onTestFinished(() => fs.rmSync(work, { recursive: true, force: true }));
  const input = path.join(work, 'in');
  fs.mkdirSync(input);
  fs.writeFileSync(path.join(input, 'part-0.txt'), Array.from({ length: 300 }, (_, i) => `line ${i}`).join('\n') + '\n');
  const cluster = await haCluster(postgres.url, onTestFinished);
  const first = await awaitLeader(cluster);
  const url = cluster.jobManagerUrls[first];
  const module = await uploadModule(url, slowModule(input, path.join(work, 'out')));
  const body = { module, parallelism: 1, checkpoints: { interval: 600_000 } };
  const id = await submitJob(url, body);
  await waitUntil(url, id, (job) => job.tasks.length > 0 && job.tasks.every((task) => task.state === 'RUNNING'), 'every task RUNNING');
  // A minute of lines is ahead of the savepoint's barrier: it is under way when the leader dies.
  const savepoint = await eventually('the savepoint triggered (its source asked for its first split)', () =>
    callJson<{ id: number }>('POST', `${url}/jobs/${id}/savepoints`, { directory: path.join(work, 'savepoints') }).then(
      (answer) => answer.id,
      (error: unknown) => {
        if (error instanceof HttpError && error.code === 'SPW_ERR_JOB_RESTARTING') return undefined;
        throw error;
      },
    ),
  );
  expect((await callJson<{ status: string }>('GET', `${url}/jobs/${id}/savepoints/${savepoint}`)).status).toBe('IN_PROGRESS');
  await killHard(cluster.jobManagerProcess(first));

  // Submitted to the standby again and again during the change, as a client that reads Retry-After would.
  const standby = cluster.jobManagerUrls[1 - first];
  const answers: Awaited<ReturnType<typeof submitOnce>>[] = [];
  while (answers.at(-1)?.status !== 202) {
    answers.push(await submitOnce(standby, body));
    expect([202, 307, 503], JSON.stringify(answers.at(-1))).toContain(answers.at(-1)!.status);
  }
  const statuses = answers.map((answer) => answer.status);
  // First (at most a few renew intervals) sent to the leader last seen renewing, then told to wait, then taken.
  expect(statuses.indexOf(503), statuses.join(',')).toBeGreaterThanOrEqual(0);
  expect(statuses.slice(statuses.indexOf(503), -1).every((status) => status === 503), statuses.join(',')).toBe(true);
  for (const answer of answers.filter((a) => a.status === 307)) expect(answer.location).toBe(`${url}/jobs`);
  for (const answer of answers.filter((a) => a.status === 503)) expect([answer.answer.code, answer.retryAfter]).toEqual(['SPW_ERR_NO_LEADER', '1']);
  expect(await awaitLeader(cluster, first)).toBe(1 - first);
  const submitted = answers.at(-1)!.answer.id as string;
  await waitRunning(standby, submitted);

  // The new leader says the savepoint failed with the change, and runs the job on.
  const status = await callJson<{ status: string; code?: string }>('GET', `${standby}/jobs/${id}/savepoints/${savepoint}`);
  expect([status.status, status.code]).toEqual(['FAILED', 'SPW_ERR_LEADER_CHANGED']);
  await waitRunning(standby, id);
  const { jobs } = await callJson<{ jobs: { id: string; state: string }[] }>('GET', `${standby}/jobs`);
  expect(jobs.map((job) => [job.id, job.state])).toEqual([
    [id, JobState.RUNNING],
    [submitted, JobState.RUNNING],
  ]);
}, 120_000);

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { killHard, processOf, readTextOutput, waitUntil, writeWords, type JobDetails } from '../helpers/failover.js';
import { eventually, sleep } from '../helpers/eventually.js';
import { expectCounts, expectTaskManagersIdle, result, submitJob, taskManagers, uploadModule, waitFor, waitForTaskManagers } from '../helpers/jobs.js';

// Well above a loaded machine's stalls: losses are found by their failed calls and connections, not by heartbeats.
const HEARTBEAT_TIMEOUT = 8000;
// A module loads in a sandbox per submission, which a loaded CI machine has taken over 2 s to start.
const MODULE_LOAD_TIMEOUT = 8000;
const SLOT_TIMEOUT = 5000;
let cluster: LocalCluster;
let url: string;
let work: string;
let corpus: string;
let reference: Map<string, number>;
let slowWordCount: string;

const test = clusterTest({
  taskManagers: 3,
  slots: 2,
  memory: '64mb',
  heartbeatTimeoutMs: HEARTBEAT_TIMEOUT,
  jobManagerArgs: ['--module-load-timeout', String(MODULE_LOAD_TIMEOUT), '--restart-delay', '200', '--slot-timeout', String(SLOT_TIMEOUT)],
});

test.beforeAll(async ({ cluster: started }) => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-failover-'));
  corpus = path.join(work, 'corpus');
  reference = writeWords(corpus, 4, 20_000, 5000, 7);
  cluster = started;
  url = cluster.url;
  const source = fs.readFileSync(new URL('../fixtures/slowWordCount.mjs', import.meta.url), 'utf8');
  slowWordCount = await uploadModule(url, source);
}, 60_000);

afterAll(async () => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Keeps three TaskManagers registered: one more for each that a test killed, whether it passed or not. */
async function replenish(): Promise<void> {
  const registered = await taskManagers(url);
  for (let i = registered.length; i < 3; i++) cluster.addTaskManager();
  await cluster.waitForTaskManagers(3);
}

afterEach(replenish, 30_000);

function wordCount(params: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> {
  return submitJob(url, { module: slowWordCount, params: { input: corpus, ...params }, parallelism: 4, ...extra });
}

interface JobExceptionEntry {
  task: string;
  attempt: number;
  taskManager: string;
  code: string;
  message: string;
}

async function exceptions(id: string): Promise<JobExceptionEntry[]> {
  return (await callJson<{ exceptions: JobExceptionEntry[] }>('GET', `${url}/jobs/${id}/exceptions`)).exceptions;
}

/** A failed job's code, beside its message. */
const errorCodeOf = (status: object): unknown => (status as { errorCode?: string }).errorCode;

const onVictim = (job: JobDetails, stage: string, victim: string): JobDetails['tasks'] => job.tasks.filter((t) => t.stage === stage && t.taskManager === victim);

// sort-merge partitions are read again as blocking ones are (issue 12's failover case).
test.each(['blocking', 'sort-merge'])('%s word count: a TaskManager killed after its map tasks finished; only its partitions are made again, the others are read again, exact', async (exchange) => {
  const id = await wordCount({ every: 50, countPauseMs: 100 }, { exchange });
  // tm of slot 3 runs tokenize.3 and count.3 alone.
  const running = await waitUntil(url, id, (j) => j.tasks.some((t) => t.stage === 'count' && t.state === 'RUNNING'), 'the count stage running');
  const victim = running.tasks.find((t) => t.stage === 'count' && t.subtask === 3)!.taskManager;
  const { host, dataPort } = (await taskManagers(url)).find((t) => t.id === victim)!;
  await killHard(await processOf(url, victim, cluster.processes));
  const status = await waitFor(url, id, 60_000);
  expect(status.state, status.error).toBe('FINISHED');
  expectCounts(await result<[string, number]>(url, id), reference);
  // Its own tasks' failures name it; a reader that lost its connection first names its data address.
  const lost = await exceptions(id);
  expect(lost.some((e) => e.taskManager === victim && e.message.includes(victim)), JSON.stringify(lost)).toBe(true);
  expect(lost.every((e) => e.message.includes(victim) || e.message.includes(`${host}:${dataPort}`)), JSON.stringify(lost)).toBe(true);
  const done = (await callJson<JobDetails>('GET', `${url}/jobs/${id}`)).tasks;
  // The map tasks whose partitions survived ran once; the victim's ran again elsewhere.
  expect(done.filter((t) => t.stage === 'tokenize').map((t) => t.attempt)).toEqual([0, 0, 0, 1]);
  expect(done.every((t) => t.taskManager !== victim)).toBe(true);
}, 90_000);

test('blocking word count: a TaskManager killed while its map task runs; the job finishes exact and names the loss', async () => {
  const id = await wordCount({ every: 200, tokenizePauseMs: 20 }, { exchange: 'blocking' });
  const running = await waitUntil(url, id, (j) => j.tasks.some((t) => t.stage === 'tokenize' && t.state === 'RUNNING' && t.subtask === 3), 'tokenize.3 running');
  const victim = running.tasks.find((t) => t.stage === 'tokenize' && t.subtask === 3)!.taskManager;
  expect(onVictim(running, 'tokenize', victim).every((t) => t.state !== 'FINISHED')).toBe(true);
  await killHard(await processOf(url, victim, cluster.processes));
  const status = await waitFor(url, id, 60_000);
  expect(status.state, status.error).toBe('FINISHED');
  expectCounts(await result<[string, number]>(url, id), reference);
  expect((await exceptions(id)).some((e) => e.taskManager === victim && /lost/.test(e.message))).toBe(true);
}, 90_000);

test('pipelined word count: a TaskManager killed mid-job restarts the region and the job finishes exact', async () => {
  // The count tasks hold their records until the kill has landed: the job cannot end first, however slow the machine.
  const gate = path.join(work, 'pipelined-kill-gate');
  const id = await wordCount({ every: 200, tokenizePauseMs: 20, holdUntil: gate }, { exchange: 'pipelined' });
  const running = await waitUntil(url, id, (j) => j.tasks.every((t) => t.state === 'RUNNING'), 'every task running');
  // A count task runs to the job's end; a tokenize task may finish before the kill lands, and its TaskManager then holds nothing to lose.
  const victim = running.tasks.find((t) => t.stage === 'count' && t.subtask === 3)!.taskManager;
  await killHard(await processOf(url, victim, cluster.processes));
  fs.writeFileSync(gate, '');
  const status = await waitFor(url, id, 60_000);
  expect(status.state, status.error).toBe('FINISHED');
  expectCounts(await result<[string, number]>(url, id), reference);
  const details = await callJson<JobDetails>('GET', `${url}/jobs/${id}`);
  expect(details.restarts, JSON.stringify({ restarts: details.restarts, attempts: details.tasks.map((t) => [t.stage, t.subtask, t.attempt, t.taskManager]), exceptions: await exceptions(id), victim })).toBeGreaterThanOrEqual(1);
  expect(details.tasks.every((t) => t.attempt >= 1), 'one pipelined region: every task ran again').toBe(true);
}, 90_000);

test('a TaskManager stopped with SIGTERM mid-job says it stops: it leaves at once, the loss names that, and the job finishes exact', async () => {
  const id = await wordCount({ every: 200, tokenizePauseMs: 20 }, { exchange: 'pipelined' });
  const running = await waitUntil(url, id, (j) => j.tasks.every((t) => t.state === 'RUNNING'), 'every task running');
  const victim = running.tasks.find((t) => t.subtask === 3)!.taskManager;
  const child = await processOf(url, victim, cluster.processes);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
  // Gone at once, well before its heartbeats would time out.
  expect((await taskManagers(url)).map((t) => t.id)).not.toContain(victim);
  const status = await waitFor(url, id, 60_000);
  expect(status.state, status.error).toBe('FINISHED');
  expectCounts(await result<[string, number]>(url, id), reference);
  // Its peers saw their connections to it close; the JobManager had already heard it stop, and lost nobody.
  const reasons = (await exceptions(id)).map((e) => e.message);
  expect(reasons.some((m) => m.includes(`taskmanager ${victim}`) && m.includes('stopped')), JSON.stringify(reasons)).toBe(true);
  expect(reasons.every((m) => !m.includes(' lost: ')), JSON.stringify(reasons)).toBe(true);
}, 90_000);

test('restart strategy none: the same kill ends the job FAILED, naming the TaskManager, and the survivors release everything', async () => {
  const id = await wordCount({ every: 200, tokenizePauseMs: 20 }, { exchange: 'blocking', restart: { strategy: 'none' } });
  const running = await waitUntil(url, id, (j) => j.tasks.some((t) => t.stage === 'tokenize' && t.state === 'RUNNING' && t.subtask === 3), 'tokenize.3 running');
  const victim = running.tasks.find((t) => t.stage === 'tokenize' && t.subtask === 3)!.taskManager;
  await killHard(await processOf(url, victim, cluster.processes));
  const status = await waitFor(url, id, 30_000);
  expect(status.state).toBe('FAILED');
  expect(status.error).toContain(victim);
  expect(status.error).toMatch(/restart strategy none/);
  await expectTaskManagersIdle(url);
}, 60_000);

test('a restart that finds no free slot on a live TaskManager fails after --slot-timeout, naming what it needed', async () => {
  const id = await submitJob(url, { module: slowWordCount, params: { input: corpus, every: 200, tokenizePauseMs: 20 }, parallelism: 6, exchange: 'blocking' });
  const running = await waitUntil(url, id, (j) => j.tasks.some((t) => t.stage === 'tokenize' && t.state === 'RUNNING' && t.subtask === 5), 'tokenize.5 running');
  const victim = running.tasks.find((t) => t.stage === 'tokenize' && t.subtask === 5)!.taskManager;
  await killHard(await processOf(url, victim, cluster.processes));
  const status = await waitFor(url, id, SLOT_TIMEOUT + 20_000);
  expect(status.state).toBe('FAILED');
  expect(errorCodeOf(status)).toBe('SPW_ERR_NO_SLOTS');
  expect(status.error).toMatch(new RegExp(`could not restart: 2 more free slot\\(s\\) needed on live taskmanagers, 0 free after waiting ${SLOT_TIMEOUT} ms`));
}, 60_000);

test('a job submitted right after a kill finishes on the survivors, exact', async () => {
  const [first] = await taskManagers(url);
  await killHard(await processOf(url, first.id, cluster.processes));
  const id = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 2 });
  const status = await waitFor(url, id, 60_000);
  expect(status.state, status.error).toBe('FINISHED');
  expect(status.tasks.every((t) => t.taskManager !== first.id)).toBe(true);
  expectCounts(await result<[string, number]>(url, id), reference);
}, 60_000);

test('a task that always throws ends the job FAILED after exactly its attempts, each one listed', async () => {
  const failing = `export default { name: 'always-fails', stages: [
    { name: 'gen', parallelism: 1, source: { kind: 'generate', generate: function* () { yield 1; } }, operators: [{ map: () => { throw new Error('always'); } }] },
    { name: 'out', parallelism: 1, inputs: [{ from: 'gen', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`;
  const hash = await uploadModule(url, failing);
  const id = await submitJob(url, { module: hash, parallelism: 1, restart: { strategy: 'fixed-delay', attempts: 2, delayMs: 50 } });
  const status = await waitFor(url, id, 30_000);
  expect(status.state).toBe('FAILED');
  expect(errorCodeOf(status)).toBe('SPW_ERR_NO_RESTART_LEFT');
  expect(status.error).toMatch(/always.*no restart left: 2 restarts/);
  const listed = (await exceptions(id)).filter((e) => e.task.endsWith('.gen.0'));
  expect(listed.map((e) => e.attempt)).toEqual([0, 1, 2]);
  // The job's own code threw a plain Error: each attempt's exception says so by its code.
  expect(listed.map((e) => e.code)).toEqual(['SPW_ERR_USER_CODE', 'SPW_ERR_USER_CODE', 'SPW_ERR_USER_CODE']);
  expect(listed.every((e) => /always/.test(e.message))).toBe(true);
}, 60_000);

test('a text sink commits once: a restarted counting task leaves only part files, with exact counts', async () => {
  const output = path.join(work, 'committed');
  const id = await wordCount({ output, failOnce: path.join(work, 'failed-once') }, { exchange: 'blocking' });
  const status = await waitFor(url, id, 60_000);
  expect(status.state, status.error).toBe('FINISHED');
  expect((await exceptions(id)).map((e) => e.message)).toEqual([expect.stringMatching(/fails once/)]);
  expectCounts(readTextOutput(output, 4), reference);
}, 60_000);

test('a canceled job with a text sink leaves no part file and no temporary file', async () => {
  const output = path.join(work, 'canceled');
  const id = await wordCount({ output, every: 50, countPauseMs: 100 }, { exchange: 'blocking' });
  await waitUntil(url, id, (j) => j.tasks.some((t) => t.stage === 'count' && t.state === 'RUNNING'), 'the count stage running');
  await callJson('POST', `${url}/jobs/${id}/cancel`, {});
  expect((await waitFor(url, id)).state).toBe('CANCELED');
  let left: string[] = [];
  await eventually(() => `the output folder emptied (${left.join(' ')})`, () => (left = fs.readdirSync(output)).length === 0);
}, 60_000);

test('a sink that cannot write fails its job, naming the path and the OS error; the next job is exact', async () => {
  const file = path.join(work, 'a-file');
  fs.writeFileSync(file, '');
  for (const [output, error] of [
    ['/proc/nope', /\/proc\/nope.*ENOENT/],
    [path.join(file, 'out'), /a-file\/out.*(ENOTDIR|EEXIST)/],
  ] as const) {
    const id = await submitJob(url, { job: 'wordcount', params: { input: corpus, output }, parallelism: 2, restart: { strategy: 'none' } });
    const status = await waitFor(url, id);
    expect(status.state).toBe('FAILED');
    expect(status.error).toMatch(error);
  }
  const next = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4 });
  expectCounts(await result<[string, number]>(url, (await waitFor(url, next), next)), reference);
}, 60_000);

test('a module that spins at load is refused with 400 naming the timeout, and the JobManager answers throughout', async () => {
  const spinning = `for (;;) {}\nexport default { name: 'never', stages: [] };`;
  const hash = await uploadModule(url, spinning);
  let settled = false;
  const refused = callJson('POST', `${url}/jobs`, { module: hash, parallelism: 2 }).then(
    () => null,
    (error: Error) => error,
  );
  void refused.finally(() => (settled = true));
  // The JobManager answers while the module spins: overviews come back until the refusal does.
  let overviews = 0;
  while (!settled) {
    await callJson('GET', `${url}/overview`);
    overviews++;
    await sleep(100);
  }
  const error = await refused;
  expect(error).toMatchObject({ status: 400, code: 'SPW_ERR_MODULE' });
  expect(error?.message).toContain(`within ${MODULE_LOAD_TIMEOUT} ms (--module-load-timeout)`);
  expect(overviews).toBeGreaterThan(5);
  const next = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4 });
  expectCounts(await result<[string, number]>(url, (await waitFor(url, next), next)), reference);
  // The spinning module's sandbox thread was ended: a module submitted next gets a thread that answers.
  const after = await submitJob(url, { module: slowWordCount, params: { input: corpus }, parallelism: 4 });
  expectCounts(await result<[string, number]>(url, (await waitFor(url, after), after)), reference);
}, 60_000);

test('the sandbox thread kept between submissions: after modules that throw at their top level or leave a timer that throws, modules define their jobs with their own params', async () => {
  // A job whose collected record is its params' value: a module defined twice gives each submission its own.
  const echo = (tag: string): string => `export default (params) => ({ name: '${tag}', stages: [
    { name: 'gen', parallelism: 1, source: { kind: 'generate', generate: function* () { yield ['${tag}', params.value]; } } },
    { name: 'out', parallelism: 1, inputs: [{ from: 'gen', partitioning: { type: 'forward' } }], sink: { kind: 'collect' } } ] });`;
  const run = async (hash: string, value: number): Promise<unknown[]> => {
    const id = await submitJob(url, { module: hash, params: { value }, parallelism: 1 });
    expect((await waitFor(url, id)).state).toBe('FINISHED');
    return result(url, id);
  };
  const refusal = (source: string): Promise<{ status?: number; code?: string }> =>
    uploadModule(url, source).then((hash) =>
      callJson('POST', `${url}/jobs`, { module: hash, parallelism: 1 }).then(
        () => ({}),
        (error: { status?: number; code?: string }) => error,
      ),
    );
  const first = await uploadModule(url, echo('first'));
  expect(await run(first, 1)).toEqual([['first', 1]]);
  expect(await run(first, 2)).toEqual([['first', 2]]);
  expect(await refusal(`throw new Error('at the top level');`)).toMatchObject({ status: 400, code: 'SPW_ERR_MODULE' });
  expect(await run(first, 3)).toEqual([['first', 3]]);
  // Defines its job, then its timer throws in the kept thread: that thread is dropped, and the JobManager stays.
  const fired = path.join(work, 'sandbox-timer-fired');
  const timer = await uploadModule(url, `import fs from 'node:fs';\nsetTimeout(() => { fs.writeFileSync(${JSON.stringify(fired)}, ''); throw new Error('thrown in the sandbox after the answer'); }, 100);\n${echo('timer')}`);
  expect(await run(timer, 4)).toEqual([['timer', 4]]);
  await eventually('the timer left in the sandbox fired', () => fs.existsSync(fired));
  expect(await run(await uploadModule(url, echo('second')), 5)).toEqual([['second', 5]]);
  expect(await run(first, 6)).toEqual([['first', 6]]);
}, 60_000);

test('a TaskManager that stops answering is declared lost; when it wakes it drops its work and registers again', async () => {
  const id = await wordCount({ every: 200, tokenizePauseMs: 20 }, { exchange: 'blocking', restart: { strategy: 'none' } });
  const running = await waitUntil(url, id, (j) => j.tasks.some((t) => t.stage === 'tokenize' && t.state === 'RUNNING' && t.subtask === 3), 'tokenize.3 running');
  const victim = running.tasks.find((t) => t.stage === 'tokenize' && t.subtask === 3)!.taskManager;
  const sleeper = await processOf(url, victim, cluster.processes);
  sleeper.kill('SIGSTOP');
  try {
    const status = await waitFor(url, id, HEARTBEAT_TIMEOUT + 10_000);
    expect(status.state).toBe('FAILED');
    expect(status.error).toContain(victim);
  } finally {
    sleeper.kill('SIGCONT');
  }
  // It comes back under a new id, having dropped all it held.
  await waitForTaskManagers(url, 3);
  expect((await taskManagers(url)).map((t) => t.id)).not.toContain(victim);
  await expectTaskManagersIdle(url);
}, 60_000);

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { callJson, HttpError } from '../src/job/Http.js';
import { JobManager } from '../src/jobmanager/JobManager.js';

let jm: JobManager | null = null;
let dataDir = '';

afterEach(async () => {
  await jm?.close();
  jm = null;
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function start(options: ConstructorParameters<typeof JobManager>[0]): Promise<string> {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-jm-test-'));
  jm = new JobManager({ port: 0, dataDir, ...options });
  return jm.listen();
}

async function failure(call: Promise<unknown>): Promise<HttpError> {
  const error = await call.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(HttpError);
  return error as HttpError;
}

const synthetic = { job: 'synthetic', params: { records: 1000 }, parallelism: 2 };

test('a job waits for slots as CREATED, can be canceled, and only the last --job-history ended jobs are kept', async () => {
  const url = await start({ jobHistory: 3 });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, synthetic);
    expect((await callJson<{ state: string }>('GET', `${url}/jobs/${id}`)).state).toBe('CREATED');
    expect((await callJson<{ state: string }>('POST', `${url}/jobs/${id}/cancel`, {})).state).toBe('CANCELED');
    ids.push(id);
  }
  const { jobs } = await callJson<{ jobs: { id: string; state: string }[] }>('GET', `${url}/jobs`);
  expect(jobs.map((j) => j.id)).toEqual(ids.slice(2));
  const gone = await failure(callJson('GET', `${url}/jobs/${ids[0]}`));
  expect(gone.status).toBe(404);
  expect(gone.message).toMatch(new RegExp(`no job ${ids[0]}`));
  const again = await failure(callJson('POST', `${url}/jobs/${ids[4]}/cancel`, {}));
  expect(again.status).toBe(409);
  const early = await failure(callJson('GET', `${url}/jobs/${ids[4]}/result`));
  expect(early.status).toBe(409);
  expect(early.message).toMatch(/is CANCELED, not FINISHED/);
});

test('a job that never gets its slots fails after --slot-timeout, naming what it needed', async () => {
  const url = await start({ slotTimeoutMs: 200 });
  const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, { ...synthetic, parallelism: 3 });
  let status = { state: 'CREATED', error: '' };
  for (let i = 0; i < 50 && status.state === 'CREATED'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    status = await callJson('GET', `${url}/jobs/${id}`);
  }
  expect(status.state).toBe('FAILED');
  expect(status.error).toMatch(/not enough free slots: the job needs 3, the cluster has 0/);
});

test('errors are JSON with a message: bad bodies, unknown ids, unknown modules', async () => {
  const url = await start({});
  const extra = await failure(callJson('POST', `${url}/jobs`, { ...synthetic, colour: 'blue' }));
  expect(extra.status).toBe(400);
  expect(extra.message).toMatch(/additional properties/i);
  const exchange = await failure(callJson('POST', `${url}/jobs`, { ...synthetic, exchange: 'teleport' }));
  expect(exchange.message).toMatch(/exchange/);
  const module = await failure(callJson('POST', `${url}/jobs`, { module: 'a'.repeat(64) }));
  expect(module.status).toBe(400);
  expect(module.message).toMatch(/no uploaded module a{64}; POST it to \/modules first/);
  expect((await failure(callJson('GET', `${url}/jobs/job-nope`))).status).toBe(404);
  const overview = await callJson<{ taskmanagers: number; builtinJobs: string[] }>('GET', `${url}/overview`);
  expect(overview.taskmanagers).toBe(0);
  expect(overview.builtinJobs).toEqual(['wordcount', 'sort', 'join', 'synthetic']);
});

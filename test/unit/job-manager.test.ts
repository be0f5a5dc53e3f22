import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterEach, expect, test } from 'vitest';
import { callJson, HttpError } from '../../src/rpc/HttpClient.js';
import { JobManager } from '../../src/jobmanager/JobManager.js';
import { ERRORS } from '../../src/errors/Errors.js';
import { ClusterSecret } from '../../src/security/ClusterSecret.js';
import { eventually } from '../helpers/eventually.js';

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
  expect([gone.status, gone.code]).toEqual([404, 'SPW_ERR_JOB_NOT_FOUND']);
  const again = await failure(callJson('POST', `${url}/jobs/${ids[4]}/cancel`, {}));
  expect([again.status, again.code]).toEqual([409, 'SPW_ERR_JOB_ENDED']);
  const early = await failure(callJson('GET', `${url}/jobs/${ids[4]}/result`));
  expect([early.status, early.code]).toEqual([409, 'SPW_ERR_JOB_NOT_FINISHED']);
});

test('a job that never gets its slots fails after --slot-timeout, naming what it needed', async () => {
  const url = await start({ slotTimeoutMs: 200 });
  const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, { ...synthetic, parallelism: 3 });
  let status = { state: 'CREATED', error: '', errorCode: '' };
  await eventually('the job out of CREATED', async () => (status = await callJson('GET', `${url}/jobs/${id}`)).state !== 'CREATED', { everyMs: 100 });
  expect(status.state).toBe('FAILED');
  expect(status.errorCode).toBe('SPW_ERR_NO_SLOTS');
  expect(status.error).toMatch(/the job needs 3, the cluster has 0/);
});

/** A REST answer as it comes: status and JSON body. */
async function raw(method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const json = body === undefined ? {} : { 'content-type': 'application/json' };
  const response = await request(url, { method, headers: { ...json, ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.statusCode, body: await response.body.json() };
}

test('a REST error is {code, error} with a code of the catalogue, at its status: unknown job, bad body, unknown route', async () => {
  const url = await start({});
  expect(await raw('GET', `${url}/jobs/job-nope`)).toEqual({ status: 404, body: { code: 'SPW_ERR_JOB_NOT_FOUND', error: 'no job job-nope' } });
  const bad = await raw('POST', `${url}/jobs`, { ...synthetic, colour: 'blue' });
  expect(bad).toMatchObject({ status: 400, body: { code: 'SPW_ERR_BAD_REQUEST' } });
  expect(Object.keys(bad.body as object)).toEqual(['code', 'error']);
  expect(await raw('GET', `${url}/no/such/route`)).toMatchObject({ status: 404, body: { code: 'SPW_ERR_NOT_FOUND' } });
  expect(await raw('GET', `${url}/taskmanagers/tm-9999`)).toMatchObject({ status: 404, body: { code: 'SPW_ERR_TASKMANAGER_NOT_FOUND' } });
  expect(await raw('GET', `${url}/modules/${'b'.repeat(64)}`)).toMatchObject({ status: 404, body: { code: 'SPW_ERR_MODULE_NOT_FOUND' } });
});

test('a request without the cluster secret is refused with SPW_ERR_UNAUTHORIZED', async () => {
  const secret = ClusterSecret.generate();
  const url = await start({ secret });
  expect(await raw('GET', `${url}/jobs`)).toMatchObject({ status: ERRORS.SPW_ERR_UNAUTHORIZED.status, body: { code: 'SPW_ERR_UNAUTHORIZED' } });
  expect((await raw('GET', `${url}/jobs`, undefined, { authorization: `Bearer ${secret.token}` })).status).toBe(200);
});

test('a refused submission is a 400 whose code says why: bad body, unknown exchange, unknown module, unknown job', async () => {
  const url = await start({});
  const extra = await failure(callJson('POST', `${url}/jobs`, { ...synthetic, colour: 'blue' }));
  expect([extra.status, extra.code]).toEqual([400, 'SPW_ERR_BAD_REQUEST']);
  const exchange = await failure(callJson('POST', `${url}/jobs`, { ...synthetic, exchange: 'teleport' }));
  expect([exchange.status, exchange.code]).toEqual([400, 'SPW_ERR_UNKNOWN_PARTITION_TYPE']);
  const module = await failure(callJson('POST', `${url}/jobs`, { module: 'a'.repeat(64) }));
  expect([module.status, module.code]).toEqual([400, 'SPW_ERR_MODULE']);
  const job = await failure(callJson('POST', `${url}/jobs`, { job: 'teleport' }));
  expect([job.status, job.code]).toEqual([400, 'SPW_ERR_UNKNOWN_JOB']);
  const overview = await callJson<{ taskmanagers: number; builtinJobs: string[] }>('GET', `${url}/overview`);
  expect(overview.taskmanagers).toBe(0);
  const nexmark = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q11'].map((q) => `nexmark-${q}`);
  expect(overview.builtinJobs).toEqual(['wordcount', 'sort', 'join', 'synthetic', 'combine', ...nexmark, 'sql']);
});

/**
 * A cluster with a secret (what `spillway local` makes): REST wants the bearer token
 * on every route but /healthz, a failing address is limited, data connections without
 * the key are refused while the TaskManagers stay up, and a TaskManager with another
 * secret cannot join. Spawns dist/ (`npm run build` first).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { writeCorpus } from '../../src/job/Corpus.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { ClusterSecret } from '../../src/security/ClusterSecret.js';
import { AUTH_FAILURE_LIMIT } from '../../src/security/RestAuth.js';
import { probe, type Attack } from '../fixtures/dataPlaneProbe.js';
import { clusterTest } from '../helpers/cluster.js';
import { expectCounts, expectFinished, referenceCount, result, submitJob, taskManagers } from '../helpers/jobs.js';

const BIN = path.resolve('bin/spillway.js');
let cluster: LocalCluster;
let url: string;
let work: string;
let corpus: string;

const test = clusterTest({ taskManagers: 2, slots: 2, memory: '64mb', jobManagerArgs: ['--max-module-size', '64kb'] });

test.beforeAll(async ({ cluster: started }) => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-security-'));
  corpus = path.join(work, 'corpus');
  writeCorpus(corpus, 2, 1 << 20, 3);
  cluster = started;
  url = cluster.url;
}, 60_000);

afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
});

/** A raw call with the given Authorization header (or none). */
async function raw(method: 'GET' | 'POST', target: string, authorization?: string, body?: string): Promise<{ status: number; headers: Record<string, unknown>; json: Record<string, unknown> }> {
  const response = await request(target, {
    method,
    headers: { ...(authorization === undefined ? {} : { authorization }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body,
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function wordCountIsExact(): Promise<void> {
  const id = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4 });
  await expectFinished(url, id);
  expectCounts(await result<[string, number]>(url, id), referenceCount(corpus));
}

function spillway(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env, timeout: timeoutMs, killSignal: 'SIGKILL' }, (error, _stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
    );
    child.stdin?.end();
  });
}

const started: ChildProcess[] = [];

/** Starts `spillway ARGS`; resolves once its output matches `ready`, rejects if it exits first. */
function start(args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let seen = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      if (ready.test(seen)) resolve(child);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${seen}`)));
  });
}

function killStarted(): void {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** The environment of this process without a cluster secret. */
function envWithout(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.SPILLWAY_SECRET;
  return env;
}

describe('REST authentication', () => {
  test('POST /jobs, POST /modules and TaskManager registration without a token answer 401 with WWW-Authenticate and a JSON error', async () => {
    const calls: [string, string][] = [
      ['/jobs', JSON.stringify({ job: 'wordcount', params: { input: corpus } })],
      ['/modules', '"export default {}"'],
      ['/internal/taskmanagers', JSON.stringify({ host: '127.0.0.1', dataPort: 1, httpPort: 1, slots: 1, memory: 1 })],
    ];
    for (const [route, body] of calls) {
      const answer = await raw('POST', `${url}${route}`, undefined, body);
      expect(answer.status, route).toBe(401);
      expect(answer.headers['www-authenticate'], route).toBe('Bearer realm="spillway"');
      expect(answer.json.code, route).toBe('SPW_ERR_UNAUTHORIZED');
    }
    expect((await taskManagers(url)).length).toBe(2);
  });

  test('a wrong token is a 401 on the JobManager and on a TaskManager; GET /healthz needs none; an unknown route is a 401, not a 404', async () => {
    const wrong = `Bearer ${ClusterSecret.generate().token}`;
    expect((await raw('GET', `${url}/jobs`, wrong)).status).toBe(401);
    const [tm] = await taskManagers(url);
    const tmUrl = `http://${tm.host}:${tm.httpPort}`;
    expect((await raw('GET', `${tmUrl}/status`, wrong)).status).toBe(401);
    expect((await raw('POST', `${tmUrl}/jobs/job-1/cancel`, undefined, '{}')).status).toBe(401);
    expect((await raw('GET', `${url}/metrics`)).status).toBe(401);
    expect(await raw('GET', `${url}/healthz`)).toMatchObject({ status: 200, json: { status: 'ok' } });
    expect(await raw('GET', `${tmUrl}/healthz`)).toMatchObject({ status: 200, json: { status: 'ok' } });
    // The token is the secret itself, as curl would send it.
    expect((await raw('GET', `${url}/overview`, `Bearer ${cluster.secret.token}`)).status).toBe(200);
  });

  test('an upload above --max-module-size is a 413 and stores nothing', async () => {
    const big = `export default () => ({}); // ${'x'.repeat(70 * 1024)}`;
    const answer = await raw('POST', `${url}/modules`, `Bearer ${cluster.secret.token}`, JSON.stringify(big));
    expect(answer.status).toBe(413);
    expect(answer.json.code).toBe('SPW_ERR_MODULE_TOO_LARGE');
    expect(answer.json.error, 'the limit is named').toContain('65536');
  });

  test('the local cluster wrote its secret to a file only its owner can read', () => {
    expect(fs.statSync(cluster.secretFile).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(cluster.secretFile, 'utf8').trim()).toBe(cluster.secret.token);
  });
});

describe('the data plane', () => {
  test.each<[Attack, RegExp]>([
    ['wrong-key', /authentication failed: the client does not hold the cluster key/],
    ['no-handshake', /no authentication within 5000 ms/],
    ['garbage', /bad handshake: magic/],
    ['replay', /authentication failed/],
    ['request-before-auth', /unexpected PartitionRequest frame/],
  ])('a connection with %s is refused with an error frame and closed; the next job is exact', async (attack, message) => {
    const [tm] = await taskManagers(url);
    const { dataPort } = (await callJson<{ taskmanagers: { dataPort: number }[] }>('GET', `${url}/taskmanagers`)).taskmanagers[0];
    const key = attack === 'replay' ? cluster.secret.dataKey() : ClusterSecret.generate().dataKey();
    const outcome = await probe({ host: tm.host, port: dataPort, attack, key: key.toString('hex') });
    expect(outcome.authenticated).toBe(false);
    expect(outcome.closed).toBe(true);
    expect(outcome.error).toMatch(message);
    await wordCountIsExact();
  });

  test('the right key authenticates (the probe itself is sound)', async () => {
    const [tm] = await taskManagers(url);
    const { dataPort } = (await callJson<{ taskmanagers: { dataPort: number }[] }>('GET', `${url}/taskmanagers`)).taskmanagers[0];
    expect(await probe({ host: tm.host, port: dataPort, attack: 'right-key', key: cluster.secret.dataKey().toString('hex') })).toMatchObject({
      authenticated: true,
      error: null,
    });
  });
});

describe('joining and binding', () => {
  test('a TaskManager with another secret is refused (401), says why and exits 1 without retrying', async () => {
    const env = { ...envWithout(), SPILLWAY_SECRET: ClusterSecret.generate().token };
    const { code, stderr } = await spillway(['taskmanager', '--jobmanager', url, '--slots', '1', '--memory', '16mb'], env);
    expect(code).toBe(1);
    expect(stderr).toMatch(/refused this TaskManager \(401\): this TaskManager's cluster secret is not the JobManager's/);
    expect((await taskManagers(url)).length).toBe(2);
  });

  test('a registered TaskManager whose heartbeat is refused (a JobManager with another secret) says why and exits 1', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const dataDir = path.join(work, 'heartbeat-jm');
    const first = { ...envWithout(), SPILLWAY_SECRET: ClusterSecret.generate().token };
    try {
      const jm = await start(['jobmanager', '--port', String(port), '--data-dir', dataDir], first, /listening on/);
      const tm = await start(['taskmanager', '--jobmanager', `http://127.0.0.1:${port}`, '--slots', '1', '--memory', '16mb'], first, /registered with/);
      let stderr = '';
      tm.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const tmExit = new Promise<number | null>((resolve) => tm.once('exit', resolve));
      jm.kill('SIGKILL');
      await new Promise((resolve) => jm.once('exit', resolve));
      await start(['jobmanager', '--port', String(port), '--data-dir', dataDir], { ...first, SPILLWAY_SECRET: ClusterSecret.generate().token }, /listening on/);
      expect(await tmExit).toBe(1);
      expect(stderr).toMatch(/refused this TaskManager's heartbeat: .*this TaskManager's cluster secret is not the JobManager's/);
    } finally {
      killStarted();
    }
  });

  test('a TaskManager without a secret is refused too', async () => {
    const { code, stderr } = await spillway(['taskmanager', '--jobmanager', url, '--slots', '1', '--memory', '16mb'], envWithout());
    expect(code).toBe(1);
    expect(stderr).toMatch(/the JobManager wants a cluster secret and this TaskManager has none/);
  });

  test('a non-loopback address without a secret is refused unless --insecure, which warns', async () => {
    const refused = await spillway(['jobmanager', '--host', '0.0.0.0', '--port', '0'], envWithout());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/refusing to bind 0\.0\.0\.0 without a cluster secret.*--insecure/);
    try {
      const args = ['jobmanager', '--host', '0.0.0.0', '--port', '0', '--insecure', '--data-dir', path.join(work, 'insecure-jm')];
      // It warns, then serves.
      await start(args, envWithout(), /WARNING jobmanager: --insecure: listening on 0\.0\.0\.0 with no authentication[\s\S]*listening on http/);
    } finally {
      killStarted();
    }
  });

  test('a secret shorter than 32 characters is refused with a message', async () => {
    const file = path.join(work, 'short-secret');
    fs.writeFileSync(file, '  too-short  \n');
    const { code, stderr } = await spillway(['jobmanager', '--port', '0', '--secret-file', file], envWithout());
    expect(code).toBe(1);
    expect(stderr).toMatch(/the cluster secret from --secret-file .* has 9 characters; it needs at least 32/);
  });

  test(`past ${AUTH_FAILURE_LIMIT} failed authentications an address is refused with 429, while the valid token still works`, async () => {
    let last = 0;
    for (let i = 0; i <= AUTH_FAILURE_LIMIT; i++) last = (await raw('GET', `${url}/jobs`, 'Bearer nope')).status;
    expect(last).toBe(429);
    expect((await raw('GET', `${url}/jobs`)).status).toBe(429);
    expect((await raw('GET', `${url}/jobs`, `Bearer ${cluster.secret.token}`)).status).toBe(200);
    await wordCountIsExact();
  });
});

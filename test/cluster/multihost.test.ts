/**
 * A cluster across hosts: Linux network namespaces joined by veth pairs to a bridge,
 * addresses in 198.18.0.0/15 (reserved for network benchmark testing) and no route
 * anywhere else. The JobManager runs in one namespace, a TaskManager in each of two
 * others, and a fourth plays the client and the intruder; TLS and the cluster secret
 * are on. Needs root (as CI runs); where the kernel refuses namespaces it fails saying
 * so. Every namespace it made is removed in afterAll, even after a failure: the bridge
 * and the veths live inside them. Spawns bin/ over dist/ (`npm run build` first).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { writeCorpus } from '../../src/job/Corpus.js';
import { ClusterSecret } from '../../src/security/ClusterSecret.js';
import type { ProbeOptions, ProbeResult } from '../fixtures/dataPlaneProbe.js';
import { makeCertificates, type Certificates } from '../../bench/certificates.js';
import { referenceCount } from '../helpers/jobs.js';

const BIN = path.resolve('bin/spillway.js');
const PROBE = path.resolve('dist/test/fixtures/dataPlaneProbe.js');
/** Short and unique to this run: namespace names carry the pid. */
const RUN = `spw${process.pid}`;
const SWITCH = `${RUN}-sw`;
const HOSTS = { jm: '198.18.0.1', tm1: '198.18.0.2', tm2: '198.18.0.3', client: '198.18.0.4' } as const;
type Host = keyof typeof HOSTS;
const JM_URL = `https://${HOSTS.jm}:8081`;

const made: string[] = [];
const processes: ChildProcess[] = [];
let work: string;
let certs: Certificates;
let secretFile: string;
let corpus: string;

const ns = (host: Host): string => `${RUN}-${host}`;
const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8', stdio: 'pipe' });

function makeNamespaces(): void {
  try {
    ip('netns', 'add', SWITCH);
  } catch (error) {
    throw new Error(`the kernel refused a network namespace (ip netns add, as root): ${(error as Error).message}`);
  }
  made.push(SWITCH);
  ip('-n', SWITCH, 'link', 'add', 'br0', 'type', 'bridge');
  ip('-n', SWITCH, 'link', 'set', 'br0', 'up');
  for (const [host, address] of Object.entries(HOSTS) as [Host, string][]) {
    ip('netns', 'add', ns(host));
    made.push(ns(host));
    // Both ends are made inside namespaces: nothing is added to the namespace this test runs in.
    ip('link', 'add', 'eth0', 'netns', ns(host), 'type', 'veth', 'peer', 'name', `to-${host}`, 'netns', SWITCH);
    ip('-n', SWITCH, 'link', 'set', `to-${host}`, 'master', 'br0');
    ip('-n', SWITCH, 'link', 'set', `to-${host}`, 'up');
    ip('-n', ns(host), 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    ip('-n', ns(host), 'link', 'set', 'eth0', 'up');
    ip('-n', ns(host), 'link', 'set', 'lo', 'up');
  }
}

function removeNamespaces(): void {
  for (const name of made.splice(0)) {
    try {
      ip('netns', 'del', name);
    } catch {
      // Already gone.
    }
  }
}

const TLS_ARGS = (): string[] => ['--tls-cert', certs.cert, '--tls-key', certs.key, '--tls-ca', certs.ca];

/** Runs `spillway ARGS` in a namespace; resolves on the first line matching `ready` (on stdout or stderr). */
function start(host: Host, args: string[], ready: RegExp, env: NodeJS.ProcessEnv = envWithout()): Promise<ChildProcess> {
  const child = spawn('ip', ['netns', 'exec', ns(host), process.execPath, BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  processes.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      if (ready.test(seen)) resolve(child);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`spillway ${args[0]} in ${host} exited with ${code}: ${seen}`)));
  });
}

/** Runs a command to its end in a namespace. */
function run(host: Host, command: string[], env: NodeJS.ProcessEnv = envWithout(), timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('ip', ['netns', 'exec', ns(host), ...command], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  processes.push(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

function envWithout(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.SPILLWAY_SECRET;
  return env;
}

/** Word count from the client namespace into `output`; its part files against the reference. */
async function wordCountAcrossHosts(output: string): Promise<void> {
  const submitted = await run('client', [
    process.execPath, BIN, 'submit', 'wordcount', '--jobmanager', JM_URL, '--secret-file', secretFile, ...TLS_ARGS(),
    '--param', `input=${corpus}`, '--param', `output=${output}`, '--parallelism', '4', '--wait',
  ]);
  expect(submitted.code, submitted.stdout + submitted.stderr).toBe(0);
  const counts = new Map<string, number>();
  for (const part of fs.readdirSync(output)) {
    for (const line of fs.readFileSync(path.join(output, part), 'utf8').split('\n')) {
      if (line === '') continue;
      const tab = line.lastIndexOf('\t');
      const word = line.slice(0, tab);
      expect(counts.has(word), `${word} twice`).toBe(false);
      counts.set(word, Number(line.slice(tab + 1)));
    }
  }
  expect(counts).toEqual(referenceCount(corpus));
}

async function probeFromClient(options: Omit<ProbeOptions, 'jobManager'>, token: string): Promise<ProbeResult> {
  const probe = { ...options, jobManager: { url: JM_URL, token, ca: certs.ca } };
  const { stdout, stderr } = await run('client', [process.execPath, PROBE, JSON.stringify(probe)]);
  if (stdout.trim() === '') throw new Error(`the probe printed nothing: ${stderr}`);
  return JSON.parse(stdout) as ProbeResult;
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-multihost-'));
  try {
    makeNamespaces();
    certs = makeCertificates(work, Object.values(HOSTS));
    secretFile = path.join(work, 'secret');
    ClusterSecret.generate().writeTo(secretFile);
    corpus = path.join(work, 'corpus');
    writeCorpus(corpus, 4, 1 << 20, 11);
    const secret = ['--secret-file', secretFile, ...TLS_ARGS()];
    await start('jm', ['jobmanager', '--host', HOSTS.jm, '--port', '8081', '--data-dir', path.join(work, 'jm'), ...secret], /listening on https:\/\/198\.18\.0\.1:8081/);
    // 2 slots each, and jobs of parallelism 4: every job runs on both TaskManagers. The second binds
    // every interface of its host and advertises the address its peers reach it at.
    for (const tm of ['tm1', 'tm2'] as const) {
      const bind = tm === 'tm1' ? ['--host', HOSTS.tm1] : ['--host', '0.0.0.0', '--advertise-host', HOSTS.tm2];
      const args = ['taskmanager', '--jobmanager', JM_URL, ...bind, '--slots', '2', '--memory', '64mb', '--spill-dir', path.join(work, tm), ...secret];
      await start(tm, args, /registered with/);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
}, 60_000);

async function stopAll(): Promise<void> {
  for (const child of processes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(processes.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once('exit', r)) : null)));
  removeNamespaces();
}

afterAll(async () => {
  await stopAll();
  fs.rmSync(work, { recursive: true, force: true });
  expect(ip('netns', 'list')).not.toContain(RUN);
});

describe('a cluster across three network namespaces, TLS and the secret on', () => {
  test('word count runs across them exactly', async () => {
    await wordCountAcrossHosts(path.join(work, 'out-1'));
  }, 60_000);

  test('a TaskManager with a wrong secret cannot join: it is refused and exits 1', async () => {
    const wrong = path.join(work, 'wrong-secret');
    ClusterSecret.generate().writeTo(wrong);
    const { code, stderr } = await run('tm2', [
      process.execPath, BIN, 'taskmanager', '--jobmanager', JM_URL, '--host', HOSTS.tm2, '--slots', '1', '--memory', '16mb', '--secret-file', wrong, ...TLS_ARGS(),
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/refused this TaskManager \(401\)/);
  }, 30_000);

  test('from a third namespace, a data connection without the key is refused, with or without a certificate; the next job is exact', async () => {
    const token = fs.readFileSync(secretFile, 'utf8').trim();
    // The right key, but no client certificate: only mutual TLS stands in the way.
    const rightKey = ClusterSecret.of(token, 'test').dataKey().toString('hex');
    const noCertificate = await probeFromClient({ attack: 'right-key', key: rightKey, tls: { ca: certs.ca } }, token);
    expect(noCertificate).toMatchObject({ authenticated: false, closed: true, socketError: expect.stringMatching(/certificate required/) });
    const wrongKey = await probeFromClient({ attack: 'wrong-key', key: ClusterSecret.generate().dataKey().toString('hex'), tls: { ...certs } }, token);
    expect(wrongKey).toMatchObject({ authenticated: false, closed: true, error: expect.stringMatching(/authentication failed/) });
    // The probe is sound: with the certificate and the key it gets in (to the first TaskManager listed).
    expect(await probeFromClient({ attack: 'right-key', key: rightKey, tls: { ...certs } }, token)).toMatchObject({ authenticated: true, error: null });
    const plain = await probeFromClient({ attack: 'wrong-key' }, token);
    expect(plain.authenticated).toBe(false);
    expect(plain.closed).toBe(true);
    await wordCountAcrossHosts(path.join(work, 'out-2'));
  }, 60_000);
});

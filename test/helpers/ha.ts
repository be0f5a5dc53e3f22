/**
 * What the high-availability tests (test/cluster/ha-*.test.ts, issue 39) share: a cluster of
 * two JobManagers electing their leader in PostgreSQL, a streaming job counting Redis Stream
 * entries per key into PostgreSQL, its producer, the waits on leadership and checkpoints, the
 * exactly-once check, and a PostgreSQL of a test's own that it may stop. Each test file holds
 * one test, so that the files run side by side.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect, test as base } from 'vitest';
import { LocalCluster } from '../../src/cli/LocalCluster.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { eventually, sleep } from './eventually.js';
import type { JobDetails } from './failover.js';
import { submitJob, uploadModule } from './jobs.js';
import { redisCountsModule } from './keyedCounts.js';
import { postgresScope, redisScope, type PostgresScope, type RedisScope } from './services.js';

/** vitest's `test` with a Redis key prefix and a PostgreSQL schema of the test's own. */
export const haTest = base
  // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
  .extend('redis', async ({}, { onCleanup }) => redisScope(onCleanup))
  // eslint-disable-next-line no-empty-pattern -- as above
  .extend('postgres', async ({}, { onCleanup }) => postgresScope(onCleanup));

/** What GET /overview says of leadership. */
export interface Roles {
  role: 'leader' | 'standby';
  leader: { url: string; epoch: number; since: number } | null;
}

/** Entries added to the streams in batches (paced: 100 every 100 ms) while the test does its worst; their reference counts per key. */
export class Producer {
  readonly expected = new Map<string, number>();
  added = 0;
  private stopped = false;
  private readonly running: Promise<void>;

  constructor(
    private readonly redis: RedisScope,
    private readonly streams: readonly string[],
  ) {
    this.running = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const pipeline = this.redis.client.pipeline();
      for (let i = 0; i < 100; i++, this.added++) {
        const key = `k${(this.added * 7) % 40}`;
        this.expected.set(key, (this.expected.get(key) ?? 0) + 1);
        pipeline.xadd(this.streams[this.added % this.streams.length], '*', 'key', key);
      }
      await pipeline.exec();
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}

/** An HA cluster of two JobManagers and two TaskManagers on `ha`, stopped by `onCleanup`. */
export async function haCluster(ha: string, onCleanup: (cleanup: () => Promise<void>) => void): Promise<LocalCluster> {
  const cluster = new LocalCluster({
    stdio: 'ignore',
    taskManagers: 2,
    slots: 2,
    jobManagers: 2,
    ha: { url: ha },
    jobManagerArgs: ['--restart-attempts', '50', '--restart-delay', '200'],
  });
  onCleanup(() => cluster.stop());
  await cluster.start();
  return cluster;
}

/** The index of the JobManager that leads, once one does (within `timeoutMs`), other than `not`. */
export function awaitLeader(cluster: LocalCluster, not?: number, timeoutMs = 30_000): Promise<number> {
  return eventually(
    `a JobManager but ${not} leads`,
    async () => {
      const leader = await cluster.leader();
      return leader !== undefined && leader !== not && { leader };
    },
    { timeoutMs, everyMs: 50 },
  ).then(({ leader }) => leader);
}

export async function roles(url: string): Promise<Roles> {
  return callJson<Roles>('GET', `${url}/overview`, undefined, { timeoutMs: 2000 });
}

/** Checkpoints the leader at `url` completed for job `id` (0 until it has one). */
export async function completedCheckpoints(url: string, id: string): Promise<number> {
  const view = await callJson<{ counts: { completed: number } }>('GET', `${url}/jobs/${id}/checkpoints`).catch(() => ({ counts: { completed: 0 } }));
  return view.counts.completed;
}

/** Waits until the leader at `url` has completed more than `after` checkpoints of job `id`: a kill then tests a restore from one, not from nothing. */
export async function awaitCheckpoint(url: string, id: string, after = 0, timeoutMs = 30_000): Promise<number> {
  return eventually(
    `job ${id}: more than ${after} checkpoints completed under the leader ${url}`,
    async () => {
      const completed = await completedCheckpoints(url, id);
      return completed > after && completed;
    },
    { timeoutMs, everyMs: 50 },
  );
}

/**
 * Waits until the leader at `url` runs job `id` again after a leader change: a new leader loads
 * the job as CREATED and deploys it once the TaskManagers have re-registered with it, so CREATED
 * is the way there. A terminal state fails the wait at once: the job must never fail.
 */
export async function awaitRunning(url: string, id: string, timeoutMs = 60_000): Promise<void> {
  await eventually(
    `job ${id}: RUNNING under the leader ${url}`,
    async () => {
      const job = await callJson<JobDetails>('GET', `${url}/jobs/${id}`);
      if (JobState.isTerminal(job.state)) expect.fail(`job ${id} ${job.state} under the leader ${url}: ${job.error ?? ''}`);
      return job.state === JobState.RUNNING;
    },
    { timeoutMs, everyMs: 50 },
  );
}

/** The job as the leader shows it; it must be RUNNING. */
export async function expectRunning(url: string, id: string): Promise<void> {
  const job = await callJson<JobDetails>('GET', `${url}/jobs/${id}`);
  expect(job.state, `job ${id}: ${job.error ?? ''}`).toBe(JobState.RUNNING);
}

/** Waits until every entry added is committed, then: each key's counts are 1..n, each once (the rows read once). */
export async function expectExactlyOnce(postgres: PostgresScope, producer: Producer, id: string): Promise<void> {
  let seen = 0;
  const rows = await eventually(
    () => `job ${id}: all ${producer.added} rows committed (${seen} so far)`,
    async () => {
      const { rows } = await postgres.client.query<{ key: string; n: number }>('SELECT key, n FROM updates');
      seen = rows.length;
      return rows.length >= producer.added && rows;
    },
    { timeoutMs: 45_000, everyMs: 200 },
  );
  const counts = new Map<string, number[]>();
  for (const { key, n } of rows) counts.set(key, [...(counts.get(key) ?? []), n]);
  expect([...counts.keys()].sort()).toEqual([...producer.expected.keys()].sort());
  for (const [key, n] of producer.expected) {
    expect([...counts.get(key)!].sort((a, b) => a - b), `${key}: counts 1..${n}, each once`).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  }
}

/** Starts the counting job on the cluster, once its table is there. */
export async function startCounting(cluster: LocalCluster, redis: RedisScope, postgres: PostgresScope): Promise<{ id: string; producer: Producer }> {
  await postgres.client.query('CREATE TABLE updates (key text, n integer)');
  const streams = ['s0', 's1'].map((name) => redis.key(name));
  const url = cluster.jobManagerUrls[await awaitLeader(cluster)];
  const module = await uploadModule(url, redisCountsModule('ha-counts', redis.url, streams, postgres.url));
  const id = await submitJob(url, { module, parallelism: 2, checkpoints: { interval: 500, timeout: 5000, tolerableFailures: 1000, retain: 2 } });
  return { id, producer: new Producer(redis, streams) };
}

/** A PostgreSQL instance of the test's own, on a free port, in a temp folder: one it may stop and start. */
export class OwnPostgres {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-ha-pg-'));
  private constructor(readonly port: number) {}

  static async start(): Promise<OwnPostgres> {
    const instance = new OwnPostgres(await freePort());
    fs.chmodSync(instance.dir, 0o777);
    instance.asPostgres('initdb', ['-D', instance.data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    instance.pgCtl('start');
    return instance;
  }

  get data(): string {
    return path.join(this.dir, 'data');
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  pgCtl(action: 'start' | 'stop'): void {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    this.asPostgres('pg_ctl', ['-D', this.data, '-w', '-m', 'immediate', '-l', path.join(this.dir, 'log'), '-o', options, action]);
  }

  stop(): void {
    try {
      this.pgCtl('stop');
    } catch {
      // Stopped already.
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private asPostgres(command: string, args: string[]): void {
    execFileSync('runuser', ['-u', 'postgres', '--', path.join(postgresBin(), command), ...args], { stdio: 'ignore' });
  }
}

/** The folder of PostgreSQL's server programs (initdb, pg_ctl) of this machine. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const version = fs.readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  return path.join(root, version, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

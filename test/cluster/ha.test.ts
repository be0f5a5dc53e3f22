/**
 * High availability (issue 39): two JobManagers of one cluster elect their leader in
 * PostgreSQL; a streaming job (Redis Streams in, a running count per key inserted into
 * PostgreSQL with checkpoints every 500 ms) runs through leader changes made by real
 * signals: the leader SIGKILLed three times (a restarted one joining as standby each
 * time), the leader frozen (SIGSTOP) past its lease and woken, and the HA store's own
 * PostgreSQL restarted. The job never fails, and each key's committed counts are 1..n,
 * each once. Every test runs its own cluster (its own cluster id), schema and key
 * prefix, all removed after it, whatever happens.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { expect, test as base } from 'vitest';
import { LocalCluster } from '../../src/cli/LocalCluster.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { killHard, type JobDetails } from '../helpers/failover.js';
import { RUNNING_COUNT } from '../helpers/keyedCounts.js';
import { sleep } from '../helpers/eventually.js';
import { submitJob, uploadModule } from '../helpers/jobs.js';
import { postgresScope, redisScope, type PostgresScope, type RedisScope } from '../helpers/services.js';

const test = base
  // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
  .extend('redis', async ({}, { onCleanup }) => redisScope(onCleanup))
  // eslint-disable-next-line no-empty-pattern -- as above
  .extend('postgres', async ({}, { onCleanup }) => postgresScope(onCleanup));

/** What GET /overview says of leadership. */
interface Roles {
  role: 'leader' | 'standby';
  leader: { url: string; epoch: number; since: number } | null;
}

/** A running count per `key` field of unbounded Redis streams, each update inserted as a row into `updates` (no key: a row written twice stays). */
function countingModule(redis: string, streams: readonly string[], postgres: string): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder('ha-counts');
job
  .readRedisStream({ url: ${JSON.stringify(redis)}, streams: ${JSON.stringify(streams)}, bounded: false, batchSize: 100 })
  .map((entry) => entry.fields.key)
  .keyBy((key) => key)
  .process(${RUNNING_COUNT})
  .map(([key, n]) => ({ key, n }))
  .writePostgres({ url: ${JSON.stringify(postgres)}, table: 'updates', columns: ['key', 'n'] });
export default job.build();
`;
}

/** Entries added to the streams in batches while the test does its worst; their reference counts per key. */
class Producer {
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
async function haCluster(ha: string, onCleanup: (cleanup: () => Promise<void>) => void, extraJobManagerArgs: string[] = []): Promise<LocalCluster> {
  const cluster = new LocalCluster({
    stdio: 'ignore',
    taskManagers: 2,
    slots: 2,
    jobManagers: 2,
    ha: { url: ha },
    jobManagerArgs: ['--restart-attempts', '50', '--restart-delay', '200', ...extraJobManagerArgs],
  });
  onCleanup(() => cluster.stop());
  await cluster.start();
  return cluster;
}

/** The index of the JobManager that leads, once one does (within `timeoutMs`), other than `not`. */
async function awaitLeader(cluster: LocalCluster, not?: number, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const leader = await cluster.leader();
    if (leader !== undefined && leader !== not) return leader;
    if (Date.now() > deadline) throw new Error(`no JobManager but ${not} leads after ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function roles(url: string): Promise<Roles> {
  return callJson<Roles>('GET', `${url}/overview`, undefined, { timeoutMs: 2000 });
}

/** Checkpoints the leader at `url` completed for job `id` (0 until it has one). */
async function completedCheckpoints(url: string, id: string): Promise<number> {
  const view = await callJson<{ counts: { completed: number } }>('GET', `${url}/jobs/${id}/checkpoints`).catch(() => ({ counts: { completed: 0 } }));
  return view.counts.completed;
}

/** Waits until the leader at `url` completed a checkpoint of job `id`: a kill then tests a restore from one, not from nothing. */
async function awaitCheckpoint(url: string, id: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await completedCheckpoints(url, id)) === 0) {
    if (Date.now() > deadline) throw new Error(`job ${id}: no checkpoint completed under the leader ${url} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** The job as the leader shows it; it must be RUNNING. */
async function expectRunning(url: string, id: string): Promise<void> {
  const job = await callJson<JobDetails>('GET', `${url}/jobs/${id}`);
  expect(job.state, `job ${id}: ${job.error ?? ''}`).toBe(JobState.RUNNING);
}

/** Waits until every entry added is committed, then: each key's counts are 1..n, each once. */
async function expectExactlyOnce(postgres: PostgresScope, producer: Producer, id: string): Promise<void> {
  const rows = async (): Promise<{ key: string; n: number }[]> => (await postgres.client.query<{ key: string; n: number }>('SELECT key, n FROM updates')).rows;
  const deadline = Date.now() + 45_000;
  while ((await rows()).length < producer.added) {
    if (Date.now() > deadline) throw new Error(`job ${id}: ${(await rows()).length} of ${producer.added} rows committed after 45 s`);
    await sleep(200);
  }
  const counts = new Map<string, number[]>();
  for (const { key, n } of await rows()) counts.set(key, [...(counts.get(key) ?? []), n]);
  expect([...counts.keys()].sort()).toEqual([...producer.expected.keys()].sort());
  for (const [key, n] of producer.expected) {
    expect([...counts.get(key)!].sort((a, b) => a - b), `${key}: counts 1..${n}, each once`).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  }
}

/** Starts the counting job on the cluster, once its table is there. */
async function startCounting(cluster: LocalCluster, redis: RedisScope, postgres: PostgresScope): Promise<{ id: string; producer: Producer }> {
  await postgres.client.query('CREATE TABLE updates (key text, n integer)');
  const streams = ['s0', 's1'].map((name) => redis.key(name));
  const url = cluster.jobManagerUrls[await awaitLeader(cluster)];
  const module = await uploadModule(url, countingModule(redis.url, streams, postgres.url));
  const id = await submitJob(url, { module, parallelism: 2, checkpoints: { interval: 500, timeout: 5000, tolerableFailures: 1000, retain: 2 } });
  return { id, producer: new Producer(redis, streams) };
}

test('the leader SIGKILLed three times mid-job, a restarted one joining as standby each time: a new leader takes over, the job never fails, every count is committed once', async ({ redis, postgres, onTestFinished }) => {
  const cluster = await haCluster(postgres.url, onTestFinished);
  const { id, producer } = await startCounting(cluster, redis, postgres);
  const savepoints = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-ha-savepoints-'));
  onTestFinished(() => fs.rmSync(savepoints, { recursive: true, force: true }));
  try {
    let leader = await awaitLeader(cluster);
    for (let kill = 0; kill < 3; kill++) {
      await awaitCheckpoint(cluster.jobManagerUrls[leader], id);
      // Before the last kill a savepoint is asked for: the new leader knows it completed, or says it failed with the change.
      const savepoint = kill === 2 ? (await callJson<{ id: number }>('POST', `${cluster.jobManagerUrls[leader]}/jobs/${id}/savepoints`, { directory: savepoints })).id : undefined;
      const killed = Date.now();
      await killHard(cluster.jobManagerProcess(leader));
      const next = await awaitLeader(cluster, leader);
      console.log(`kill ${kill + 1}: jobmanager ${next} leads ${Date.now() - killed} ms after the leader's SIGKILL`);
      if (savepoint !== undefined) {
        const status = await callJson<{ status: string; code?: string }>('GET', `${cluster.jobManagerUrls[next]}/jobs/${id}/savepoints/${savepoint}`);
        expect(status.status === 'COMPLETED' || status.code === 'SPW_ERR_LEADER_CHANGED', JSON.stringify(status)).toBe(true);
      }
      await cluster.restartHaJobManager(leader);
      expect((await roles(cluster.jobManagerUrls[leader])).role).toBe('standby');
      leader = next;
      await expectRunning(cluster.jobManagerUrls[leader], id);
    }
    await awaitCheckpoint(cluster.jobManagerUrls[leader], id);
    await producer.stop();
    await expectExactlyOnce(postgres, producer, id);
    await expectRunning(cluster.jobManagerUrls[leader], id);
    // Canceled, the job has its result in the store, and nothing else of it is left there.
    await callJson('POST', `${cluster.jobManagerUrls[leader]}/jobs/${id}/cancel`, {});
    const deadline = Date.now() + 20_000;
    while ((await postgres.client.query('SELECT 1 FROM spillway_ha_results WHERE job_id = $1', [id])).rowCount === 0) {
      if (Date.now() > deadline) throw new Error(`job ${id}: no result in the HA store 20 s after its cancel`);
      await sleep(100);
    }
    expect((await postgres.client.query('SELECT state FROM spillway_ha_results WHERE job_id = $1', [id])).rows).toEqual([{ state: JobState.CANCELED }]);
    expect((await postgres.client.query('SELECT 1 FROM spillway_ha_jobs WHERE job_id = $1', [id])).rowCount).toBe(0);
    // A savepoint's record stays: it is the user's.
    expect((await postgres.client.query('SELECT 1 FROM spillway_ha_checkpoints WHERE job_id = $1 AND NOT savepoint', [id])).rowCount).toBe(0);
  } finally {
    await producer.stop();
  }
}, 120_000);

test('split brain: the leader frozen (SIGSTOP) past its lease, the standby takes over; woken, the old one steps down, completes no checkpoint and commits nothing; then it leads again when the new one is killed', async ({ redis, postgres, onTestFinished }) => {
  const cluster = await haCluster(postgres.url, onTestFinished);
  const { id, producer } = await startCounting(cluster, redis, postgres);
  try {
    const first = await awaitLeader(cluster);
    const frozen = cluster.jobManagerProcess(first);
    await awaitCheckpoint(cluster.jobManagerUrls[first], id);
    const { epoch } = (await roles(cluster.jobManagerUrls[first])).leader!;
    frozen.kill('SIGSTOP');
    onTestFinished(() => void frozen.kill('SIGCONT'));
    const second = await awaitLeader(cluster, first);
    await awaitCheckpoint(cluster.jobManagerUrls[second], id);
    const before = await postgres.client.query('SELECT checkpoint_id FROM spillway_ha_checkpoints WHERE epoch = $1 ORDER BY 1', [epoch]);
    frozen.kill('SIGCONT');
    // Woken, it finds out on its own clock that its lease ended: it answers as a standby at once.
    const deadline = Date.now() + 5000;
    while ((await roles(cluster.jobManagerUrls[first])).role !== 'standby') {
      if (Date.now() > deadline) throw new Error('the woken JobManager still says it leads 5 s after SIGCONT');
      await sleep(50);
    }
    await awaitCheckpoint(cluster.jobManagerUrls[second], id);
    await sleep(1500);
    // Nothing completed at its epoch since it was frozen: the store's rows show it.
    expect((await postgres.client.query('SELECT checkpoint_id FROM spillway_ha_checkpoints WHERE epoch = $1 ORDER BY 1', [epoch])).rows).toEqual(before.rows);
    await expectRunning(cluster.jobManagerUrls[second], id);
    await killHard(cluster.jobManagerProcess(second));
    expect(await awaitLeader(cluster, second)).toBe(first);
    await awaitCheckpoint(cluster.jobManagerUrls[first], id);
    await producer.stop();
    await expectExactlyOnce(postgres, producer, id);
    await expectRunning(cluster.jobManagerUrls[first], id);
  } finally {
    await producer.stop();
  }
}, 120_000);

/** A PostgreSQL instance of the test's own, on a free port, in a temp folder: one it may stop and start. */
class OwnPostgres {
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

test("the HA store's PostgreSQL restarted mid-job: the leader loses its lease and stands by, one leads once the database is back, the job goes on from its checkpoint, exact", async ({ redis, postgres, onTestFinished }) => {
  const store = await OwnPostgres.start();
  onTestFinished(() => store.stop());
  const cluster = await haCluster(store.url, onTestFinished);
  const { id, producer } = await startCounting(cluster, redis, postgres);
  try {
    const leader = await awaitLeader(cluster);
    await awaitCheckpoint(cluster.jobManagerUrls[leader], id);
    store.pgCtl('stop');
    // Without its store no JobManager can renew: within the lease none says it leads.
    const deadline = Date.now() + 10_000;
    while ((await cluster.leader()) !== undefined) {
      if (Date.now() > deadline) throw new Error('a JobManager still leads 10 s after the HA store stopped');
      await sleep(100);
    }
    store.pgCtl('start');
    const next = await awaitLeader(cluster);
    await awaitCheckpoint(cluster.jobManagerUrls[next], id);
    await producer.stop();
    await expectExactlyOnce(postgres, producer, id);
    await expectRunning(cluster.jobManagerUrls[next], id);
    const client = new pg.Client({ connectionString: store.url });
    await client.connect();
    try {
      expect(Number((await client.query<{ epoch: string }>('SELECT epoch FROM spillway_ha_leader')).rows[0].epoch)).toBeGreaterThan(1);
    } finally {
      await client.end();
    }
  } finally {
    await producer.stop();
  }
}, 120_000);

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
  const deadline = Date.now() + 30_000;
  // Killed once every task runs: the job is under way.
  for (;;) {
    const running = await callJson<JobDetails>('GET', `${url}/jobs/${id}`);
    expect(running.state, `job ${id}: ${running.error ?? ''}`).toBe(JobState.RUNNING);
    if (running.tasks.length > 0 && running.tasks.every((task) => task.state === 'RUNNING')) break;
    if (Date.now() > deadline) throw new Error(`job ${id}: its tasks do not all run within 30 s`);
    await sleep(20);
  }
  await killHard(cluster.jobManagerProcess(leader));
  const next = cluster.jobManagerUrls[await awaitLeader(cluster, leader)];
  const finished = Date.now() + 60_000;
  let job = await callJson<JobDetails>('GET', `${next}/jobs/${id}`);
  while (job.state !== JobState.FINISHED) {
    expect(job.state, `job ${id}: ${job.error ?? ''}`).not.toBe(JobState.FAILED);
    if (Date.now() > finished) throw new Error(`job ${id} not finished 60 s after the new leader took over (${job.state})`);
    await sleep(100);
    job = await callJson<JobDetails>('GET', `${next}/jobs/${id}`);
  }
  const written = fs
    .readdirSync(output)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) => fs.readFileSync(path.join(output, name), 'utf8').split('\n').filter((line) => line !== ''))
    // writeText writes a string record as its JSON.
    .map((line) => JSON.parse(line) as string);
  expect(written.sort()).toEqual(lines.sort());
}, 120_000);

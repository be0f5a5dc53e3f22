/**
 * Failover of the JobManager (issue 39), on an HA cluster of 2 JobManagers and 2
 * TaskManagers x 2 slots: a streaming job (Redis Streams in at a steady rate, a running
 * count per key inserted into PostgreSQL, checkpoints every 500 ms) whose leader is
 * SIGKILLed `kills` times (a restarted one joining as standby each time). Per kill: the
 * time to a new leader, the time to the first row committed after the new leader took
 * over, and the committed rate over the 5 s after the kill beside the 5 s before (the
 * dip). Beside it, in the same run, today's figure: a TaskManager of the same job
 * SIGKILLed (and replaced), the time to the first row committed after it. The count is
 * checked exact at the end. Its streams and schema are removed afterwards, however it ends.
 */
import crypto from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import pg from 'pg';
import { LocalCluster } from '../src/cli/LocalCluster.js';
import { callJson } from '../src/rpc/HttpClient.js';
import { percentile } from './measure.js';

const REDIS_URL = process.env.SPILLWAY_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const POSTGRES_URL = process.env.SPILLWAY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Entries added a second: steady, well below what the job can take. */
const RATE = 2000;
const WINDOW_MS = 5000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface KillFigure {
  /** From the SIGKILL to another JobManager answering as leader (or the restarted tasks running, for a TaskManager). */
  leaderMs?: number;
  /** From the SIGKILL to the first row committed after the new leader (or the restart) took over. */
  firstCommitMs: number;
  /** Rows committed a second in the window after the kill over the window before. */
  rateRatio: number;
}

export interface HaFigures {
  rate: number;
  leaderKills: KillFigure[];
  taskManagerKills: KillFigure[];
  summary: Record<string, { p50: number; p99: number }>;
  exact: boolean;
}

function countingModule(redis: string, streams: readonly string[], postgres: string): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder('ha-bench');
job
  .readRedisStream({ url: ${JSON.stringify(redis)}, streams: ${JSON.stringify(streams)}, bounded: false, batchSize: 200 })
  .map((entry) => entry.fields.key)
  .keyBy((key) => key)
  .process({ processElement(key, ctx, emit) { const c = ctx.state.value('count'); const n = (c.get() ?? 0) + 1; c.set(n); emit([key, n]); } })
  .map(([key, n]) => ({ key, n }))
  .writePostgres({ url: ${JSON.stringify(postgres)}, table: 'updates', columns: ['key', 'n'] });
export default job.build();
`;
}

/** The committed rows as they grow, sampled every 20 ms: when each count was first seen. */
class CommitWatch {
  readonly samples: { at: number; rows: number }[] = [];
  private stopped = false;
  private readonly running: Promise<void>;

  constructor(private readonly client: pg.Client) {
    this.running = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const { rows } = await this.client.query<{ n: string }>('SELECT count(*) AS n FROM updates');
      this.samples.push({ at: Date.now(), rows: Number(rows[0].n) });
      await sleep(20);
    }
  }

  rowsAt(at: number): number {
    return this.samples.findLast((s) => s.at <= at)?.rows ?? 0;
  }

  /** When the rows first grew past what they were at `after`, once `after` passed. */
  firstGrowthAfter(after: number): number | undefined {
    const base = this.rowsAt(after);
    return this.samples.find((s) => s.at > after && s.rows > base)?.at;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}

async function leaderIndex(cluster: LocalCluster, not?: number): Promise<number> {
  for (;;) {
    const leader = await cluster.leader();
    if (leader !== undefined && leader !== not) return leader;
    await sleep(20);
  }
}

async function completed(url: string, id: string): Promise<number> {
  return (await callJson<{ counts: { completed: number } }>('GET', `${url}/jobs/${id}/checkpoints`).catch(() => ({ counts: { completed: 0 } }))).counts.completed;
}

/** Waits until the leader at `url` has completed `more` checkpoints of the job past the `from` it had. */
async function checkpointsPast(url: string, id: string, from: number, more = 1): Promise<void> {
  while ((await completed(url, id)) < from + more) await sleep(50);
}

/** Rows a second committed over [from, to). */
function rateOver(watch: CommitWatch, from: number, to: number): number {
  return ((watch.rowsAt(to) - watch.rowsAt(from)) * 1000) / (to - from);
}

export async function measureHa(quick: boolean): Promise<HaFigures> {
  const kills = quick ? 3 : 10;
  const tmKills = quick ? 2 : 3;
  const schema = `spillway_bench_ha_${crypto.randomBytes(4).toString('hex')}`;
  const postgres = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.query(`CREATE TABLE "${schema}".updates (key text, n integer)`);
  const redis = new Redis(REDIS_URL);
  const prefix = `spillway-bench-ha:${crypto.randomBytes(4).toString('hex')}:`;
  const streams = [`${prefix}s0`, `${prefix}s1`];
  const cluster = new LocalCluster({ stdio: 'ignore', taskManagers: 2, slots: 2, jobManagers: 2, ha: { url: postgres }, jobManagerArgs: ['--restart-attempts', '1000', '--restart-delay', '100'] });
  const reader = new pg.Client({ connectionString: postgres });
  let stopped = false;
  const expected = new Map<string, number>();
  let added = 0;
  let producing: Promise<void> = Promise.resolve();
  let watch: CommitWatch | null = null;
  try {
    await cluster.start();
    await reader.connect();
    let leader = await leaderIndex(cluster);
    let url = cluster.jobManagerUrls[leader];
    const { hash } = await callJson<{ hash: string }>('POST', `${url}/modules`, countingModule(REDIS_URL, streams, postgres), { contentType: 'text/javascript' });
    const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, { module: hash, parallelism: 2, checkpoints: { interval: 500, timeout: 5000, tolerableFailures: 1000, retain: 2 } });
    producing = (async () => {
      const perTick = RATE / 10;
      while (!stopped) {
        const batch = redis.pipeline();
        for (let i = 0; i < perTick; i++, added++) {
          const key = `k${added % 50}`;
          expected.set(key, (expected.get(key) ?? 0) + 1);
          batch.xadd(streams[added % 2], '*', 'key', key);
        }
        await batch.exec();
        await sleep(100);
      }
    })();
    watch = new CommitWatch(reader);
    await checkpointsPast(url, id, 0, 4);
    const leaderKills: KillFigure[] = [];
    for (let k = 0; k < kills; k++) {
      await checkpointsPast(url, id, await completed(url, id), 2);
      await sleep(WINDOW_MS);
      const process = cluster.jobManagerProcess(leader);
      const killed = Date.now();
      await killHard(process);
      const next = await leaderIndex(cluster, leader);
      const led = Date.now();
      await cluster.restartHaJobManager(leader);
      leader = next;
      url = cluster.jobManagerUrls[leader];
      await checkpointsPast(url, id, 0, 2);
      while (Date.now() < killed + WINDOW_MS) await sleep(50);
      const first = watch.firstGrowthAfter(led) ?? Date.now();
      leaderKills.push({ leaderMs: led - killed, firstCommitMs: first - killed, rateRatio: rateOver(watch, killed, killed + WINDOW_MS) / rateOver(watch, killed - WINDOW_MS, killed) });
      console.log(`leader kill ${k + 1}: new leader after ${led - killed} ms, first commit after ${first - killed} ms`);
    }
    const taskManagerKills: KillFigure[] = [];
    for (let k = 0; k < tmKills; k++) {
      await checkpointsPast(url, id, await completed(url, id), 2);
      await sleep(WINDOW_MS);
      const victim = await taskManagerOfJob(cluster, url, id);
      const restarts = await restartsOf(url, id);
      const killed = Date.now();
      await killHard(victim);
      cluster.addTaskManager();
      while ((await restartsOf(url, id)) === restarts) await sleep(20);
      const restarted = Date.now();
      await checkpointsPast(url, id, await completed(url, id), 1);
      while (Date.now() < killed + WINDOW_MS) await sleep(50);
      const first = watch.firstGrowthAfter(restarted) ?? Date.now();
      taskManagerKills.push({ firstCommitMs: first - killed, rateRatio: rateOver(watch, killed, killed + WINDOW_MS) / rateOver(watch, killed - WINDOW_MS, killed) });
      console.log(`taskmanager kill ${k + 1}: first commit after ${first - killed} ms`);
    }
    stopped = true;
    await producing;
    const deadline = Date.now() + 60_000;
    while (watch.rowsAt(Date.now()) < added && Date.now() < deadline) await sleep(100);
    const { rows } = await reader.query<{ key: string; n: number; c: string }>('SELECT key, max(n) AS n, count(*) AS c FROM updates GROUP BY key');
    const exact = rows.length === expected.size && rows.every((row) => expected.get(row.key) === row.n && Number(row.c) === row.n);
    const stats = (values: number[]): { p50: number; p99: number } => {
      const sorted = [...values].sort((a, b) => a - b);
      return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
    };
    const summary = {
      'leader kill: new leader (ms)': stats(leaderKills.map((f) => f.leaderMs!)),
      'leader kill: first commit after (ms)': stats(leaderKills.map((f) => f.firstCommitMs)),
      'leader kill: rate over 5 s after / before': stats(leaderKills.map((f) => f.rateRatio)),
      'taskmanager kill (baseline): first commit after (ms)': stats(taskManagerKills.map((f) => f.firstCommitMs)),
      'taskmanager kill (baseline): rate over 5 s after / before': stats(taskManagerKills.map((f) => f.rateRatio)),
    };
    console.log(`\nJobManager failover: ${kills} leader kills, ${tmKills} TaskManager kills (baseline), ${RATE} entries/s, checkpoints every 500 ms; output exact: ${exact}`);
    console.log('| figure | p50 | p99 |\n| --- | --- | --- |');
    for (const [name, { p50, p99 }] of Object.entries(summary)) console.log(`| ${name} | ${p50.toFixed(name.includes('rate') ? 2 : 0)} | ${p99.toFixed(name.includes('rate') ? 2 : 0)} |`);
    return { rate: RATE, leaderKills, taskManagerKills, summary, exact };
  } finally {
    stopped = true;
    await producing.catch(() => undefined);
    await watch?.stop().catch(() => undefined);
    await cluster.stop();
    await reader.end().catch(() => undefined);
    await redis.del(...streams).catch(() => undefined);
    redis.disconnect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end();
  }
}

/** The process of a TaskManager that runs a task of the job: its loss restarts the job. */
async function taskManagerOfJob(cluster: LocalCluster, url: string, id: string): Promise<ChildProcess> {
  const { tasks } = await callJson<{ tasks: { taskManager: string }[] }>('GET', `${url}/jobs/${id}`);
  const { taskmanagers } = await callJson<{ taskmanagers: { id: string; host: string; httpPort: number }[] }>('GET', `${url}/taskmanagers`);
  const tm = taskmanagers.find((t) => t.id === tasks[0].taskManager)!;
  const { pid } = await callJson<{ pid: number }>('GET', `http://${tm.host}:${tm.httpPort}/status`);
  return cluster.processes.find((p) => p.pid === pid)!;
}

async function restartsOf(url: string, id: string): Promise<number> {
  return (await callJson<{ restarts?: number }>('GET', `${url}/jobs/${id}`)).restarts ?? 0;
}

async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { NexmarkGenerator } from '../../src/connectors/nexmark/NexmarkGenerator.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { killHard, processOf, waitUntil } from '../helpers/failover.js';
import { nexmarkSql } from '../helpers/nexmarkSql.js';
import { postgresScope } from '../helpers/services.js';

const EVENTS = 40_000;
const KILLS = 2;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-upsert-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const test = clusterTest({
  taskManagers: 2,
  slots: 2,
  heartbeatTimeoutMs: 8000,
  jobManagerArgs: ['--restart-attempts', '50', '--restart-delay', '200'],
  extraArgs: ['--cancel-timeout', '5000'],
  // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
}).extend('postgres', async ({}, { onCleanup }) => postgresScope(onCleanup));

async function completed(url: string, id: string): Promise<number> {
  return (await callJson<{ counts: { completed: number } }>('GET', `${url}/jobs/${id}/checkpoints`)).counts.completed;
}

/** After each completed checkpoint, SIGKILLs a TaskManager that runs a task of the job and starts a replacement. */
async function killAfterCheckpoints(cluster: LocalCluster, id: string): Promise<void> {
  let seen = 0;
  const victims: string[] = [];
  for (let k = 0; k < KILLS; k++) {
    // The count read once: the one that passed the wait is the one the next kill waits past.
    seen = await eventually(
      `a checkpoint of ${id} completed before kill ${k}`,
      async () => {
        const now = await completed(cluster.url, id);
        return now > seen && now;
      },
      { timeoutMs: 30_000, everyMs: 100 },
    );
    await replenished(cluster, victims);
    const job = await waitUntil(cluster.url, id, (j) => j.state === JobState.RUNNING && j.tasks.every((t) => t.state === 'RUNNING'), 'every task running', 30_000);
    const victim = [...new Set(job.tasks.map((t) => t.taskManager))].sort()[k % 2]!;
    await killHard(await processOf(cluster.url, victim, cluster.processes));
    victims.push(victim);
    cluster.addTaskManager();
  }
}

/** Waits until the cluster has its two TaskManagers again, the killed ones gone from the list. */
async function replenished(cluster: LocalCluster, victims: readonly string[]): Promise<void> {
  await eventually(
    'the TaskManagers replaced',
    async () => {
      const { taskmanagers } = await callJson<{ taskmanagers: { id: string }[] }>('GET', `${cluster.url}/taskmanagers`);
      return taskmanagers.filter((t) => !victims.includes(t.id)).length >= 2;
    },
    { timeoutMs: 30_000, everyMs: 100 },
  );
  // Lets this process call the replacements' /status too.
  await cluster.waitForTaskManagers(0);
}

test('an unbounded-style GROUP BY (a changelog) into a PostgreSQL upsert table, with checkpoints, stays exact under TaskManager kills', async ({ cluster, postgres }) => {
  await postgres.client.query('CREATE TABLE auction_stats (auction BIGINT PRIMARY KEY, bids BIGINT, top BIGINT)');
  const statements = [
    // Paced: the stream takes about 10 s, long enough for checkpoints and kills.
    nexmarkSql('ddl_gen', { events: EVENTS, tps: 4000 }),
    nexmarkSql('ddl_views', { events: EVENTS }),
    `CREATE TABLE auction_stats (auction BIGINT, bids BIGINT, top BIGINT, PRIMARY KEY (auction) NOT ENFORCED)
       WITH ('connector' = 'jdbc', 'url' = '${postgres.url}', 'table-name' = 'auction_stats');`,
    "SET 'execution.checkpointing.interval' = '500 ms';",
    `SET 'state.checkpoints.dir' = '${work}';`,
    'INSERT INTO auction_stats SELECT auction, COUNT(*), MAX(price) FROM bid GROUP BY auction;',
  ].join('\n');
  const { results } = await callJson<{ results: { kind: string; id?: string }[] }>('POST', `${cluster.url}/sql`, { statements });
  const id = results.find((r) => r.kind === 'job')!.id!;
  try {
    await killAfterCheckpoints(cluster, id);
    const ended = await waitUntil(cluster.url, id, (j) => JobState.isTerminal(j.state), 'the end', 60_000);
    expect(ended.state).toBe(JobState.FINISHED);
  } finally {
    await callJson('POST', `${cluster.url}/jobs/${id}/cancel`, {}).catch(() => undefined);
  }
  const expected = new Map<number, { bids: number; top: number }>();
  const generator = new NexmarkGenerator({ events: EVENTS, seed: 0 });
  for (let e = generator.next(); e !== null; e = generator.next()) {
    if (e.type !== 'bid') continue;
    const s = expected.get(e.bid.auction) ?? { bids: 0, top: -1 };
    expected.set(e.bid.auction, { bids: s.bids + 1, top: Math.max(s.top, e.bid.price) });
  }
  const { rows } = await postgres.client.query<{ auction: string; bids: string; top: string }>('SELECT auction, bids, top FROM auction_stats ORDER BY auction');
  expect(rows.map((r) => [Number(r.auction), Number(r.bids), Number(r.top)])).toEqual([...expected].sort(([a], [b]) => a - b).map(([a, s]) => [a, s.bids, s.top]));
});

/**
 * High availability (issue 39): the HA store's own PostgreSQL restarted under the counting
 * job of test/helpers/ha.ts.
 */
import pg from 'pg';
import { expect } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { awaitCheckpoint, awaitLeader, expectExactlyOnce, expectRunning, haCluster, haTest as test, OwnPostgres, startCounting } from '../helpers/ha.js';

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
    await eventually('no JobManager leads once the HA store stopped', async () => (await cluster.leader()) === undefined, { timeoutMs: 10_000, everyMs: 100 });
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

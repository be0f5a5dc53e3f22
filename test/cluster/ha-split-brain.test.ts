/**
 * High availability (issue 39), split brain: the leader of the counting job of
 * test/helpers/ha.ts frozen (SIGSTOP) past its lease and woken.
 */
import { expect } from 'vitest';
import { killHard } from '../helpers/failover.js';
import { eventually } from '../helpers/eventually.js';
import { awaitCheckpoint, awaitLeader, completedCheckpoints, expectExactlyOnce, expectRunning, haCluster, haTest as test, roles, startCounting } from '../helpers/ha.js';

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
    await eventually('the woken JobManager says it stands by', async () => (await roles(cluster.jobManagerUrls[first])).role === 'standby', { timeoutMs: 5000, everyMs: 50 });
    // Two more checkpoints of the new leader's after that: the old one had a checkpoint's round to complete one if it could.
    const since = await completedCheckpoints(cluster.jobManagerUrls[second], id);
    await awaitCheckpoint(cluster.jobManagerUrls[second], id, since + 1);
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

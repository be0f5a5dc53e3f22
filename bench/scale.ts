/**
 * What width costs (issue 41). The control plane in this process, on simulated
 * TaskManagers: a job of two stages joined all-to-all at each width, expanded into its
 * execution graph, its partitions tracked, every task's deployment built (after every
 * producer is ready, when the consumer's groups carry a location each), and one lost
 * producer's restart set; time, heap kept and bytes that would go on the wire. The data
 * plane on real processes: `synthetic` at a width against 2 TaskManagers at parallelism
 * 2, the whole cluster's CPU a record, in the same run.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import type { JobDefinition } from '../src/job/JobDefinition.js';
import type { TaskManagerInfo } from '../src/jobmanager/cluster/TaskManagerRegistry.js';
import { ExecutionGraph } from '../src/jobmanager/scheduler/ExecutionGraph.js';
import { PartitionTracker } from '../src/jobmanager/scheduler/PartitionTracker.js';
import { regionsToRestart } from '../src/jobmanager/scheduler/PipelinedRegions.js';
import { partitionType } from '../src/network/networkThread/partition/PartitionTypes.js';
import { runSynthetic, withCluster, type Exchange } from './cluster.js';

/** Slots of a simulated TaskManager: 1,000 of them hold a 10,000-wide job. */
export const SIMULATED_SLOTS = 10;

export interface ControlPlaneRun {
  width: number;
  exchange: Exchange;
  taskManagers: number;
  tasks: number;
  /** Objects the graph keeps for its edges: groups (the per-pair model kept width x width links). */
  groups: number;
  regions: number;
  buildMs: number;
  trackMs: number;
  /** Every task's deployment built and serialized as it would travel, partitions ready. */
  deployMs: number;
  deployBytes: number;
  /** The restart set of a lost producer partition. */
  failoverMs: number;
  restarted: number;
  heapMiB: number;
}

const gc: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

const TWO_STAGES: JobDefinition = {
  name: 'wide',
  stages: [
    { name: 'a', source: { kind: 'generate', generate: () => [] } },
    { name: 'b', inputs: [{ from: 'a', partitioning: { type: 'rebalance' } }], sink: { kind: 'discard' } },
  ],
};

function simulated(n: number): TaskManagerInfo[] {
  return Array.from({ length: n }, (_, i) => ({ id: `tm-${i}`, host: '198.18.0.1', dataPort: 10_000 + i, httpPort: 20_000 + i, slots: SIMULATED_SLOTS, freeSlots: SIMULATED_SLOTS, memory: 1 << 25, lastHeartbeat: 0, registered: 0 }));
}

/** The control plane of one wide job, in this process. */
export function measureControlPlane(width: number, exchange: Exchange): ControlPlaneRun {
  const taskManagers = simulated(Math.ceil(width / SIMULATED_SLOTS));
  gc();
  const heap = process.memoryUsage().heapUsed;
  let t = performance.now();
  const graph = new ExecutionGraph('job-wide', TWO_STAGES, width, partitionType(exchange), null, { builtin: 'synthetic', params: {} }, taskManagers, 100);
  const buildMs = performance.now() - t;
  t = performance.now();
  const tracker = new PartitionTracker();
  graph.trackPartitions(tracker);
  const byId = new Map(taskManagers.map((tm) => [tm.id, tm]));
  for (const producer of graph.verticesOf('a')) {
    const tm = byId.get(producer.taskManagerId)!;
    tracker.markReady(graph.partitionId(graph.edges[0], producer.subtask), { taskManagerId: tm.id, host: tm.host, dataPort: tm.dataPort });
  }
  const trackMs = performance.now() - t;
  t = performance.now();
  let deployBytes = 0;
  for (const vertex of graph.vertices.values()) deployBytes += Buffer.byteLength(JSON.stringify(graph.descriptor(vertex, tracker)));
  const deployMs = performance.now() - t;
  t = performance.now();
  const lost = graph.verticesOf('a')[Math.floor(width / 2)].taskId;
  const restart = regionsToRestart(graph.groups, (taskId) => graph.regionOf(taskId), [graph.regionOf(graph.verticesOf('b')[0].taskId)], () => false, (group, i) => group.from[i] === lost);
  const failoverMs = performance.now() - t;
  gc();
  const heapMiB = (process.memoryUsage().heapUsed - heap) / 2 ** 20;
  return { width, exchange, taskManagers: taskManagers.length, tasks: graph.vertices.size, groups: graph.groups.length, regions: graph.regions.length, buildMs, trackMs, deployMs, deployBytes, failoverMs, restarted: restart.size, heapMiB };
}

export interface DataPlaneRun {
  taskManagers: number;
  slots: number;
  parallelism: number;
  memory: string;
  records: number;
  seconds: number;
  nsPerRecord: number;
  exact: boolean;
  /** What stopped it, if it did not finish. */
  error?: string;
}

/** `synthetic` all-to-all on a cluster of its own; the whole cluster's CPU a record. */
export async function measureDataPlane(taskManagers: number, slots: number, parallelism: number, memory: string, records: number): Promise<DataPlaneRun> {
  const run = { taskManagers, slots, parallelism, memory, records, seconds: 0, nsPerRecord: 0, exact: false };
  try {
    return await withCluster({ taskManagers, slots, memory, managedMemory: '16mb' }, async (cluster) => {
      const cpu = cluster.cpuSeconds();
      const { run: synthetic } = await runSynthetic(cluster, records, 'pipelined', { parallelism });
      const cpuSeconds = cluster.cpuSeconds() - cpu;
      return { ...run, seconds: synthetic.seconds, nsPerRecord: (cpuSeconds * 1e9) / records, exact: synthetic.exact };
    });
  } catch (error) {
    return { ...run, error: (error as Error).message.slice(0, 200) };
  }
}

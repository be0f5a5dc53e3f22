/**
 * The scheduler's view of partition types: regions and deployment order come from
 * what each edge's type says (pipelined? re-readable?), never from its name.
 */
import { describe, expect, test } from 'vitest';
import type { JobDefinition, StageDefinition } from '../../src/job/JobDefinition.js';
import { ExecutionGraph } from '../../src/jobmanager/scheduler/ExecutionGraph.js';
import { PartitionTracker } from '../../src/jobmanager/scheduler/PartitionTracker.js';
import type { TaskManagerInfo } from '../../src/jobmanager/cluster/TaskManagerRegistry.js';
import { partitionType } from '../../src/network/networkThread/partition/PartitionTypes.js';

const TASK_MANAGERS: TaskManagerInfo[] = [1, 2].map((i) => ({
  id: `tm-${i}`,
  host: '127.0.0.1',
  dataPort: 1000 + i,
  httpPort: 2000 + i,
  slots: 2,
  freeSlots: 2,
  memory: 1 << 26,
  lastHeartbeat: 0,
  registered: 0,
}));

function stage(name: string, from?: string, exchange?: string): StageDefinition {
  if (from === undefined) return { name, source: { kind: 'generate', generate: () => [] } };
  return { name, inputs: [{ from, partitioning: { type: 'rebalance' }, ...(exchange === undefined ? {} : { exchange }) }] };
}

function graph(definition: JobDefinition, exchange = 'pipelined'): ExecutionGraph {
  return new ExecutionGraph('job-1', definition, 2, partitionType(exchange), null, { builtin: 'x', params: {} }, TASK_MANAGERS, 100);
}

/** a -pipelined-> b -hybrid-> c -sort-merge-> d -pipelined-> e */
/** Each region's stages: regions are drawn over subtasks (task ids `job.stage.subtask`). */
function regionStages(g: ExecutionGraph): string[][] {
  return g.regions.map((region) => [...new Set(region.map((taskId) => taskId.split('.')[1]))]);
}

const CHAIN: JobDefinition = {
  name: 'chain',
  stages: [stage('a'), stage('b', 'a'), stage('c', 'b', 'hybrid'), stage('d', 'c', 'sort-merge'), { ...stage('e', 'd'), sink: { kind: 'collect' } }],
};

describe('regions and deployment order from partition types', () => {
  test('a pipelined edge joins its stages in one region; hybrid and sort-merge edges bound regions', () => {
    // Parallelism 2: a pipelined all-to-all edge joins all four subtasks; each subtask of c is a region of its own.
    expect(regionStages(graph(CHAIN))).toEqual([['a', 'b'], ['c'], ['c'], ['d', 'e']]);
  });

  test('every edge takes the job default unless its input names a type', () => {
    expect(graph(CHAIN, 'blocking').edges.map((e) => e.type.name)).toEqual(['blocking', 'hybrid', 'sort-merge', 'blocking']);
    expect(regionStages(graph(CHAIN, 'blocking'))).toEqual([['a'], ['a'], ['b'], ['b'], ['c'], ['c'], ['d'], ['d'], ['e'], ['e']]);
  });

  test('a region is deployable once every partition it reads from outside is announced, whatever the type', () => {
    const g = graph(CHAIN);
    const tracker = new PartitionTracker();
    g.trackPartitions(tracker);
    const [first, second, , third] = g.regions.keys();
    const announce = (edgeFrom: string): void => {
      const edge = g.edges.find((e) => e.from === edgeFrom)!;
      for (const v of g.verticesOf(edgeFrom)) tracker.markReady(g.partitionId(edge, v.subtask), { taskManagerId: 'tm-1', host: '127.0.0.1', dataPort: 1 });
    };
    expect(g.isDeployable(first, tracker)).toBe(true);
    expect(g.isDeployable(second, tracker)).toBe(false);
    // A hybrid partition is announced with its first buffer (TaskHost asks isPipelined), while its producer runs.
    announce('b');
    expect(g.isDeployable(second, tracker)).toBe(true);
    expect(g.isDeployable(third, tracker)).toBe(false);
    announce('c');
    expect(g.isDeployable(third, tracker)).toBe(true);
  });

  test('the probe side of a join over a common ancestor is made blocking when pipelined, and kept when hybrid', () => {
    const join = (exchange: string): JobDefinition => ({
      name: 'self-join',
      stages: [
        stage('src'),
        {
          name: 'join',
          inputs: [
            { from: 'src', partitioning: { type: 'rebalance' } },
            { from: 'src', partitioning: { type: 'rebalance' }, exchange },
          ],
          operators: [{ kind: 'join', join: { keys: [(r) => r, (r) => r], combine: (l) => l } }],
          sink: { kind: 'collect' },
        },
      ],
    });
    expect(graph(join('pipelined')).edges.map((e) => e.type.name)).toEqual(['pipelined', 'blocking']);
    expect(graph(join('hybrid')).edges.map((e) => e.type.name)).toEqual(['pipelined', 'hybrid']);
  });

  test('compression is on only where asked and the type allows it', () => {
    const definition: JobDefinition = {
      name: 'compressed',
      stages: [stage('a'), stage('b', 'a', 'sort-merge'), { ...stage('c', 'b'), sink: { kind: 'collect' } }],
    };
    definition.stages[1].inputs![0].compression = 'brotli';
    const g = new ExecutionGraph('job-2', definition, 2, partitionType('pipelined'), 'snappy', { builtin: 'x', params: {} }, TASK_MANAGERS, 100);
    expect(g.edges.map((e) => [e.type.name, e.compression])).toEqual([
      ['sort-merge', 'brotli'],
      ['pipelined', null],
    ]);
    definition.stages[1].inputs![0].compression = true;
    const byDefault = new ExecutionGraph('job-3', definition, 2, partitionType('blocking'), null, { builtin: 'x', params: {} }, TASK_MANAGERS, 100);
    expect(byDefault.edges.map((e) => [e.type.name, e.compression])).toEqual([
      ['sort-merge', 'snappy'],
      ['blocking', null],
    ]);
  });
});

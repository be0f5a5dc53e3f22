/**
 * The JobManager's job model at 10,000 wide: an all-to-all edge is one consumed
 * partition group, so objects grow with tasks, never producers x consumers (counts
 * asserted, not times); at small widths the regions and restart sets are exactly those
 * of the per-pair model they replace.
 */
import { describe, expect, test } from 'vitest';
import type { JobDefinition, StageDefinition } from '../../src/job/JobDefinition.js';
import { ExecutionGraph } from '../../src/jobmanager/scheduler/ExecutionGraph.js';
import { PartitionTracker } from '../../src/jobmanager/scheduler/PartitionTracker.js';
import { regionsToRestart } from '../../src/jobmanager/scheduler/PipelinedRegions.js';
import type { TaskManagerInfo } from '../../src/jobmanager/cluster/TaskManagerRegistry.js';
import { partitionType } from '../../src/network/networkThread/partition/PartitionTypes.js';
import { encodeGroup, expandDeployment, expandGroup, readGroup } from '../../src/rpc/ConsumedPartitionGroup.js';
import type { PartitionLocation } from '../../src/rpc/TaskDeployment.js';

function taskManagers(n: number, slots: number): TaskManagerInfo[] {
  return Array.from({ length: n }, (_, i) => ({ id: `tm-${i}`, host: '127.0.0.1', dataPort: 10_000 + i, httpPort: 20_000 + i, slots, freeSlots: slots, memory: 1 << 26, lastHeartbeat: 0, registered: 0 }));
}

const location = (tm: TaskManagerInfo): PartitionLocation => ({ taskManagerId: tm.id, host: tm.host, dataPort: tm.dataPort });

function stage(name: string, from?: string, forward = false): StageDefinition {
  if (from === undefined) return { name, source: { kind: 'generate', generate: () => [] } };
  return { name, inputs: [{ from, partitioning: { type: forward ? 'forward' : 'rebalance' } }] };
}

const TWO_STAGES: JobDefinition = { name: 'wide', stages: [stage('a'), { ...stage('b', 'a'), sink: { kind: 'discard' } }] };
const WIDTH = 10_000;
const TMS = taskManagers(1000, 10);

function wide(exchange: string): ExecutionGraph {
  return new ExecutionGraph('job-w', TWO_STAGES, WIDTH, partitionType(exchange), null, { builtin: 'x', params: {} }, TMS, 100);
}

describe('a job of two 10,000-wide stages joined all-to-all, on 1,000 TaskManagers', () => {
  test('pipelined: one group, one region, one tracked consumer list and one deployment group, with placed locations, shared by every consumer', () => {
    const g = wide('pipelined');
    expect(g.vertices.size).toBe(2 * WIDTH);
    expect(g.groups).toHaveLength(1);
    expect(g.regions).toHaveLength(1);
    expect(g.regionInputs.flat()).toHaveLength(0);
    const tracker = new PartitionTracker();
    g.trackPartitions(tracker);
    const partitions = tracker.ofJob('job-w');
    expect(partitions).toHaveLength(WIDTH);
    expect(new Set(partitions.map((p) => p.consumerTasks)).size).toBe(1);
    const groups = new Set(g.verticesOf('b').map((v) => g.descriptor(v, tracker).inputs[0].group));
    expect(groups.size).toBe(1);
    const [group] = groups;
    // So wide a pipelined group carries where its producers are placed (no announcement to 10,000 consumers each), deflated.
    expect(partitions.every((p) => p.locatedAtDeploy === true)).toBe(true);
    expect(readGroup(group)).toMatchObject({ first: 0, count: WIDTH, attempts: [0, WIDTH] });
    expect(readGroup(group).locations).toHaveLength(1000);
    const consumer = g.verticesOf('b')[7];
    const expanded = expandDeployment(g.descriptor(consumer, tracker));
    expect(expanded.inputs[0].channels).toHaveLength(WIDTH);
    expect(expanded.inputs[0].channels[9_999]).toEqual({ partitionId: 'job-w/0/9999/0', location: location(TMS[999]), subpartition: 7 });
  });

  test('blocking: a region a subtask, each consumer region sharing its producers; deployable once every partition is ready, then with runs of 1,000 locations', () => {
    const g = wide('blocking');
    expect(g.regions).toHaveLength(2 * WIDTH);
    const inputs = g.regionInputs.filter((i) => i.length > 0);
    expect(inputs).toHaveLength(WIDTH);
    expect(new Set(inputs.map(([input]) => input.producers)).size).toBe(1);
    const tracker = new PartitionTracker();
    g.trackPartitions(tracker);
    const consumerRegion = g.regionOf('job-w.b.0');
    expect(g.isDeployable(consumerRegion, tracker)).toBe(false);
    for (const producer of g.verticesOf('a')) tracker.markReady(g.partitionId(g.edges[0], producer.subtask), location(TMS.find((tm) => tm.id === producer.taskManagerId)!));
    expect(g.isDeployable(consumerRegion, tracker)).toBe(true);
    const group = g.descriptor(g.verticesOf('b')[0], tracker).inputs[0].group;
    expect(g.descriptor(g.verticesOf('b')[9_999], tracker).inputs[0].group).toBe(group);
    // Past its size the group travels deflated, at a fraction of its JSON.
    expect('deflated' in group).toBe(true);
    const read = readGroup(group);
    expect(read.locations).toHaveLength(1000);
    expect(read.at).toHaveLength(2 * 1000);
    expect(JSON.stringify(group).length).toBeLessThan(JSON.stringify(read).length / 4);
  });

  test('blocking: a failed consumer restarts alone; a lost producer partition restarts its producer and every unfinished consumer', () => {
    const g = wide('blocking');
    const regionOf = (taskId: string): number => g.regionOf(taskId);
    const finished = (r: number): boolean => r === g.regionOf('job-w.b.1');
    const failed = g.regionOf('job-w.b.0');
    expect(regionsToRestart(g.groups, regionOf, [failed], finished, () => false)).toEqual(new Set([failed]));
    const lost = regionsToRestart(g.groups, regionOf, [failed], finished, (group, i) => group.from[i] === 'job-w.a.42');
    expect(lost.size).toBe(1 + WIDTH - 1);
    expect(lost.has(g.regionOf('job-w.a.42'))).toBe(true);
    expect(lost.has(g.regionOf('job-w.b.1'))).toBe(false);
  });
});

/** The per-pair model the groups replace: a link a producer x consumer, regions by union, restarts link by link. */
function pairReference(g: ExecutionGraph): { regions: string[][]; restart: (failed: number[], finished: (r: number) => boolean, lost: (from: string) => boolean) => Set<number> } {
  const links = g.groups.flatMap((group) => group.from.flatMap((from) => group.to.map((to) => ({ from, to, reReadable: group.type.isReReadable }))));
  const nodes = [...g.vertices.keys()];
  const parent = new Map(nodes.map((n) => [n, n]));
  const find = (x: string): string => (parent.get(x) === x ? x : find(parent.get(x)!));
  for (const link of links) if (!link.reReadable) parent.set(find(link.from), find(link.to));
  const byRoot = new Map<string, string[]>();
  for (const node of nodes) byRoot.set(find(node), [...(byRoot.get(find(node)) ?? []), node]);
  const regions = [...byRoot.values()];
  const regionOf = (n: string): number => regions.findIndex((r) => r.includes(n));
  const restart = (failed: number[], finished: (r: number) => boolean, lost: (from: string) => boolean): Set<number> => {
    const out = new Set(failed);
    for (let grew = true; grew; ) {
      grew = false;
      for (const { from, to } of links) {
        const [p, c] = [regionOf(from), regionOf(to)];
        if (p === c) continue;
        if (out.has(p) && !out.has(c) && !finished(c)) out.add(c);
        else if (out.has(c) && !out.has(p) && lost(from)) out.add(p);
        else continue;
        grew = true;
      }
    }
    return out;
  };
  return { regions, restart };
}

/** A seeded generator (mulberry32): the same graphs on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('at small widths, regions and restart sets are those of the per-pair model, over 60 seeded graphs', () => {
  const kinds = ['pipelined', 'blocking', 'hybrid', 'sort-merge'];
  for (let seed = 1; seed <= 60; seed++) {
    const next = random(seed);
    const stages: StageDefinition[] = [stage('s0')];
    const depth = 2 + Math.floor(next() * 3);
    for (let i = 1; i <= depth; i++) stages.push({ ...stage(`s${i}`, `s${i - 1}`, next() < 0.4), ...(i === depth ? { sink: { kind: 'discard' } } : {}) });
    for (const s of stages.slice(1)) s.inputs![0].exchange = kinds[Math.floor(next() * kinds.length)];
    const parallelism = 1 + Math.floor(next() * 4);
    const g = new ExecutionGraph(`job-${seed}`, { name: 'g', stages }, parallelism, partitionType('pipelined'), null, { builtin: 'x', params: {} }, taskManagers(2, 4), 100);
    const reference = pairReference(g);
    expect(g.regions, `seed ${seed}`).toEqual(reference.regions);
    const failed = [Math.floor(next() * g.regions.length)];
    const finishedRegions = new Set(g.regions.map((_, r) => r).filter(() => next() < 0.3));
    const lostTasks = new Set([...g.vertices.keys()].filter(() => next() < 0.3));
    const finished = (r: number): boolean => finishedRegions.has(r);
    const actual = regionsToRestart(g.groups, (t) => g.regionOf(t), failed, finished, (group, i) => lostTasks.has(group.from[i]));
    expect(actual, `seed ${seed}`).toEqual(reference.restart(failed, finished, (from) => lostTasks.has(from)));
  }
});

test("a group's runs expand to each producer's partition of its attempt and its location, whatever their order", () => {
  const next = random(7);
  const tms = taskManagers(5, 2).map(location);
  const attempts = Array.from({ length: 50 }, () => (next() < 0.8 ? 0 : Math.floor(next() * 3)));
  const locations = Array.from({ length: 50 }, () => (next() < 0.2 ? null : tms[Math.floor(next() * tms.length)]));
  const channels = expandGroup(encodeGroup('job/3/', 10, attempts, locations));
  expect(channels).toEqual(attempts.map((attempt, i) => ({ partitionId: `job/3/${10 + i}/${attempt}`, location: locations[i] })));
});

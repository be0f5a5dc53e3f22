import { expect, test } from 'vitest';
import { pipelinedRegions, regionsToRestart, type RegionEdge } from '../../src/jobmanager/scheduler/PipelinedRegions.js';
import { DEFAULT_RESTART, defaultStrategy, restartDelay, restartStrategy } from '../../src/jobmanager/failover/RestartStrategy.js';
import { partitionType } from '../../src/network/networkThread/partition/PartitionTypes.js';

const maps = ['map.0', 'map.1', 'map.2'];
const counts = ['count.0', 'count.1', 'count.2'];
/** An all-to-all edge is one group: every map feeds every count. */
const allToAll = (name: string): RegionEdge[] => [{ from: maps, to: counts, type: partitionType(name) }];

test('blocking all-to-all edges leave every subtask a region of its own', () => {
  expect(pipelinedRegions([...maps, ...counts], allToAll('blocking'))).toEqual([...maps, ...counts].map((n) => [n]));
});

test('pipelined all-to-all edges join every subtask into one region; pipelined forward edges join pairs', () => {
  expect(pipelinedRegions([...maps, ...counts], allToAll('pipelined'))).toEqual([[...maps, ...counts]]);
  const forward = maps.map((from, i) => ({ from: [from], to: [counts[i]], type: partitionType('pipelined') }));
  expect(pipelinedRegions([...maps, ...counts], forward)).toEqual(maps.map((m, i) => [m, counts[i]]));
});

test("a failed consumer of blocking partitions restarts alone while its inputs live; a lost input brings its producer and that one's unfinished consumers", () => {
  const nodes = [...maps, ...counts];
  const edges = allToAll('blocking');
  const regionOf = (n: string): number => nodes.indexOf(n);
  const nothingFinished = (): boolean => false;
  expect(regionsToRestart(edges, regionOf, [4], nothingFinished, () => false)).toEqual(new Set([4]));
  const lost = (e: RegionEdge, producer: number): boolean => e.from[producer] === 'map.2';
  expect(regionsToRestart(edges, regionOf, [4], nothingFinished, lost)).toEqual(new Set([4, 2, 3, 5]));
});

test('a restarted producer restarts the unfinished consumers of its partitions, not the finished ones', () => {
  const nodes = [...maps, ...counts];
  const regionOf = (n: string): number => nodes.indexOf(n);
  const finished = (r: number): boolean => r === 3;
  expect(regionsToRestart(allToAll('blocking'), regionOf, [0], finished, () => false)).toEqual(new Set([0, 4, 5]));
});

test('fixed-delay allows exactly its attempts; none allows no restart', () => {
  const fixed = { strategy: 'fixed-delay', attempts: 3, delayMs: 250 } as const;
  expect([1, 2, 3, 4].map((n) => restartDelay(fixed, n))).toEqual([250, 250, 250, null]);
  expect(restartDelay({ strategy: 'none' }, 1)).toBeNull();
});

test('exponential-delay grows by its multiplier up to its maximum, within its jitter', () => {
  const exp = { strategy: 'exponential-delay', attempts: 10, initialMs: 1000, maxMs: 3000, multiplier: 1.5, jitter: 0.1 } as const;
  expect([1, 2, 3, 4].map((n) => restartDelay(exp, n, () => 0.5))).toEqual([1000, 1500, 2250, 3000]);
  expect(restartDelay(exp, 1, () => 1)).toBe(1100);
  expect(restartDelay(exp, 1, () => 0)).toBe(900);
  expect(restartDelay(exp, 11)).toBeNull();
});

test("a job's strategy takes its missing fields from the JobManager's default of the same kind, and refuses a field of another kind", () => {
  const jmDefault = defaultStrategy('fixed-delay', 5, 10);
  expect(restartStrategy({ strategy: 'fixed-delay', attempts: 1 }, jmDefault)).toEqual({ strategy: 'fixed-delay', attempts: 1, delayMs: 10 });
  expect(restartStrategy({ strategy: 'exponential-delay' }, jmDefault)).toMatchObject({ attempts: 10, initialMs: 1000, maxMs: 60_000, multiplier: 1.5 });
  expect(() => restartStrategy({ strategy: 'none', attempts: 3 }, DEFAULT_RESTART)).toThrow(expect.objectContaining({ code: 'SPW_ERR_BAD_REQUEST' }));
});

import { afterEach, describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import type { PartitionTypeName } from '../../src/rpc/TaskDeployment.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import { KeyGroupSelector, RebalanceSelector, type ChannelSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { KiB, expectNoLeak, localGate, readByChannel, seedCount, tempDir, withSeed, writeAll } from '../helpers/plane.js';
import { RecordGenerator, ShapedStream, Soup, firstSequenceDifference, type Random } from '../helpers/records.js';

const soup = new Soup(2 * 1024 * 1024 + 1, 4 * 1024 * 1024 + 1);
const cleanups: (() => void)[] = [];

afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

interface Scenario {
  producers: number;
  consumers: number;
  type: PartitionTypeName;
  segmentSize: number;
  bufferTimeout: number;
  hash: boolean;
  records: unknown[][];
}

function int(random: Random, from: number, to: number): number {
  return from + Math.floor(random() * (to - from + 1));
}

function scenario(random: Random): Scenario {
  const producers = int(random, 1, 3);
  const segmentSize = Math.round(4 * KiB * 256 ** random());
  // Half the scenarios carry records of all kinds (mostly msgpackr's batches), half runs of shapes that change (mostly shaped batches).
  const generator = random() < 0.5 ? new RecordGenerator(random, soup, 4 * segmentSize) : new ShapedStream(random, soup, 0.01);
  return {
    producers,
    consumers: int(random, 1, 4),
    type: random() < 0.5 ? 'pipelined' : 'blocking',
    segmentSize,
    bufferTimeout: [-1, 0, 1, 100][int(random, 0, 3)],
    hash: random() < 0.5,
    records: Array.from({ length: producers }, () => Array.from({ length: int(random, 20, 150) }, () => generator.next())),
  };
}

function selectorFor(s: Scenario, producer: number): ChannelSelector<unknown> {
  return s.hash ? new KeyGroupSelector<unknown>((record) => record) : new RebalanceSelector<unknown>(producer);
}

/** What consumer c must receive from producer p: the producer's records its own selector sends there, in order. */
function expectedFor(s: Scenario, producer: number, consumer: number): unknown[] {
  const selector = selectorFor(s, producer);
  selector.setup(s.consumers);
  return s.records[producer].filter((record) => selector.selectChannel(record) === consumer);
}

/** P producer tasks -> P partitions of C subpartitions -> C consumer gates of P local channels each. */
async function run(s: Scenario, random: Random): Promise<void> {
  const pools: BufferPool[] = [];
  const spill = tempDir('roundtrip');
  cleanups.push(spill.remove);
  const maxes = Array.from({ length: s.producers }, () => s.consumers + 1 + int(random, 0, 6));
  const global = new NetworkBufferPool({ totalBytes: (maxes.reduce((a, b) => a + b) + 1) * s.segmentSize, segmentSize: s.segmentSize });
  const manager = new ResultPartitionManager();
  const ids = s.records.map((_, p) => `p${p}`);
  const writers = ids.map((id, p) => {
    const pool = new BufferPool(global, Math.max(1, maxes[p] - int(random, 0, 3)), maxes[p], id);
    pools.push(pool);
    const memoryBudget = int(random, 0, 3) * s.segmentSize;
    const partition = new ResultPartition({ id, type: s.type, numSubpartitions: s.consumers, pool, spillDir: spill.dir, memoryBudget });
    manager.register(partition);
    return new RecordWriter<unknown>(partition, selectorFor(s, p), s.bufferTimeout);
  });
  const reads = Array.from({ length: s.consumers }, (_, c) => readByChannel<unknown>(localGate(manager, ids, c)));
  await Promise.all(writers.map((writer, p) => writeAll(writer, s.records[p])));
  const received = await Promise.all(reads);
  for (let c = 0; c < s.consumers; c++) {
    for (let p = 0; p < s.producers; p++) {
      expect(firstSequenceDifference(expectedFor(s, p, c), received[c][p], `producer ${p} -> consumer ${c}`)).toBeNull();
    }
  }
  for (const id of ids) manager.release(id);
  expectNoLeak(global, pools);
}

describe('RecordWriter -> ResultPartition -> LocalInputChannel -> InputGate -> RecordReader', () => {
  const seeds = seedCount(20);
  test(`random records (of every kind, or in runs of changing shapes), producers, consumers, selectors, buffer sizes and timeouts: identical and in order per channel (${seeds} seeds)`, async () => {
    for (let seed = 1; seed <= seeds; seed++) {
      const random = seededRandom(seed);
      const s = scenario(random);
      const what = `${s.producers}x${s.consumers} ${s.type} ${s.hash ? 'hash' : 'rebalance'}, ${s.segmentSize} B buffers, timeout ${s.bufferTimeout}`;
      await withSeed(seed, () => run(s, random).catch((error: Error) => Promise.reject(new Error(`${what}: ${error.message}`))));
    }
  });
});

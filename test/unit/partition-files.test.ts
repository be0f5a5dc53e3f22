/**
 * What the disk-backed partition types promise beyond the conformance suite: sort-merge
 * keeps two files per partition whatever the fan-out and writes a broadcast once;
 * hybrid never makes its producer wait for a consumer; a corrupt or truncated data,
 * spill or index file fails its reader with a message that names it, never with
 * wrong records.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import type { NetworkBuffer } from '../../src/network/buffer/NetworkBuffer.js';
import type { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ShuffleEnvironment } from '../../src/network/networkThread/ShuffleEnvironment.js';
import { BroadcastSelector, RebalanceSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { gateOver, KiB, MiB, readByChannel, tempDir, writeAll } from '../helpers/plane.js';
import { eventually } from '../helpers/eventually.js';

type Row = [number, string];

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function environment(options: { budget?: number; readBuffers?: number } = {}): Promise<{ env: ShuffleEnvironment; dir: string }> {
  const { dir, remove } = tempDir('partition-files');
  const env = new ShuffleEnvironment({ memory: 32 * MiB, segmentSize: 4 * KiB, spillDir: dir, blockingMemoryBudget: options.budget ?? 64 * KiB, readBuffers: options.readBuffers });
  await env.start();
  cleanups.push(remove, () => env.close());
  return { env, dir };
}

function rows(count: number): Row[] {
  return Array.from({ length: count }, (_, i) => [i, `record ${i} `.repeat(1 + (i % 20))]);
}

/** Every file under `dir`, relative to it. */
function files(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).filter((name) => fs.statSync(path.join(dir, name)).isFile()).sort();
}

async function readSubpartition(env: ShuffleEnvironment, partition: ResultPartition, subpartition: number): Promise<Row[]> {
  const { gate } = gateOver(env, [{ address: { partitionId: partition.id, subpartition }, remote: null }], 'reader');
  const [records] = await readByChannel<Row>(gate);
  return records;
}

describe('sort-merge partition', () => {
  test('a fan-out of 32 keeps at most 2 files on disk at any moment, and exactly a data and an index file once finished', async () => {
    const { env, dir } = await environment();
    const partition = env.createPartition('job/0/0', 'sort-merge', 32);
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, files(dir).length)), 1);
    const writer = new RecordWriter<Row>(partition, new RebalanceSelector(0), -1);
    for (const row of rows(20_000)) {
      const waiting = writer.emit(row);
      if (waiting) await waiting;
      if (row[0] % 500 === 0) most = Math.max(most, files(dir).length);
    }
    await writer.close();
    clearInterval(watch);
    expect(partition.bytesSpilled, 'spilled: the data is larger than the budget').toBeGreaterThan(1 * MiB);
    expect(most, 'files on disk at most').toBeLessThanOrEqual(2);
    expect(files(dir)).toEqual(['job_0_0/data', 'job_0_0/index']);
    const expected = rows(20_000).filter((row) => row[0] % 32 === 7);
    expect(await readSubpartition(env, partition, 7)).toEqual(expected);
  });

  test('a broadcast buffer is written once, and every subpartition reads it', async () => {
    const { env } = await environment();
    const broadcast = env.createPartition('job/0/1', 'sort-merge', 8);
    const writer = new RecordWriter<Row>(broadcast, new BroadcastSelector(), -1);
    await writeAll(writer, rows(5000));
    const once = writer.bytesOut / 8;
    expect(broadcast.bytesSpilled, 'bytes on disk: one copy and its buffer headers').toBeLessThan(once * 1.05);
    expect(broadcast.bytesSpilled).toBeGreaterThanOrEqual(once);
    for (const subpartition of [0, 7]) expect(await readSubpartition(env, broadcast, subpartition)).toEqual(rows(5000));
  });

  test('64 readers share a read pool of 4 buffers and each reads its subpartition exactly', async () => {
    const { env } = await environment({ readBuffers: 4 });
    const partition = env.createPartition('job/0/2', 'sort-merge', 64);
    await writeAll(new RecordWriter<Row>(partition, new RebalanceSelector(0), -1), rows(20_000));
    const all = await Promise.all(Array.from({ length: 64 }, (_, s) => readSubpartition(env, partition, s)));
    all.forEach((records, s) => expect(records, `subpartition ${s}`).toEqual(rows(20_000).filter((row) => row[0] % 64 === s)));
  });
});

describe('hybrid partition', () => {
  test('a producer whose consumer is not there finishes all the same: what its pool cannot hold goes to disk', async () => {
    const { env } = await environment({ budget: 32 * KiB });
    const partition = env.createPartition('job/1/0', 'hybrid', 2);
    expect(partition.pool.max * partition.pool.segmentSize, 'pool bytes').toBeLessThan(64 * KiB);
    await writeAll(new RecordWriter<Row>(partition, new RebalanceSelector(0), -1), rows(20_000));
    expect(partition.bytesSpilled, 'spilled').toBeGreaterThan(2 * MiB);
    expect(partition.pool.buffersInUse, 'buffers kept in memory').toBeLessThanOrEqual(partition.pool.max);
    expect(await readSubpartition(env, partition, 1)).toEqual(rows(20_000).filter((row) => row[0] % 2 === 1));
    expect(await readSubpartition(env, partition, 1), 'read again').toEqual(rows(20_000).filter((row) => row[0] % 2 === 1));
  });
});

/** What is done to a file before it is read. */
type Damage = (file: string) => void;
const flipByte: (at: (size: number) => number) => Damage = (at) => (file) => {
  const bytes = fs.readFileSync(file);
  bytes[at(bytes.length)] ^= 0x5a;
  fs.writeFileSync(file, bytes);
};
const truncate: Damage = (file) => fs.truncateSync(file, Math.floor(fs.statSync(file).size / 2));

describe('a damaged partition file fails its reader with a message, never with wrong records', () => {
  const cases: [type: string, file: string, damage: string, Damage, RegExp][] = [
    ['sort-merge', 'data', 'a flipped payload byte', flipByte((size) => size - 100), /data file of sort-merge partition .* is corrupt: the checksum/],
    ['sort-merge', 'data', 'a flipped header byte', flipByte(() => 1), /data file of sort-merge partition .* is corrupt: a bad buffer header at offset 0/],
    ['sort-merge', 'data', 'truncation', truncate, /data file of sort-merge partition .* is (truncated|corrupt)/],
    ['sort-merge', 'index', 'a flipped byte', flipByte((size) => size - 10), /index file of sort-merge partition .* is corrupt: its checksum does not match/],
    ['sort-merge', 'index', 'truncation', truncate, /index file of sort-merge partition .* is truncated/],
    ['hybrid', 'data', 'a flipped payload byte', flipByte((size) => size - 100), /data file of hybrid partition .* is corrupt/],
    ['hybrid', 'data', 'truncation', truncate, /data file of hybrid partition .* is (truncated|corrupt)/],
    ['blocking', '1.spill', 'a flipped payload byte', flipByte((size) => size - 100), /spill file of subpartition 1 of partition .* is corrupt/],
    ['blocking', '1.spill', 'truncation', truncate, /spill file of subpartition 1 of partition .* is (truncated|corrupt)/],
  ];
  test.each(cases)('%s %s file, %s', async (type, file, _what, damage, message) => {
    const { env, dir } = await environment({ budget: 0 });
    const partition = env.createPartition(`job/2/${type}`, type, 2);
    await writeAll(new RecordWriter<Row>(partition, new RebalanceSelector(0), -1), rows(5000));
    // Hybrid keeps what nobody read in memory while it can: let its pool run short, as a slow consumer would.
    partition.onPoolExhausted();
    damage(path.join(dir, `job_2_${type}`, file));
    // Each subpartition is read to its end or its failure; whatever comes before a failure is right.
    const failures: string[] = [];
    let seen = 0;
    for (const subpartition of [0, 1]) {
      const { gate } = gateOver(env, [{ address: { partitionId: partition.id, subpartition }, remote: null }], 'reader');
      const expected = rows(5000).filter((row) => row[0] % 2 === subpartition);
      let next = 0;
      try {
        await new RecordReader<Row>(gate).forEach((row) => {
          expect(row, `subpartition ${subpartition}: record ${next}`).toEqual(expected[next]);
          next++;
        });
      } catch (error) {
        failures.push((error as Error).message);
      } finally {
        gate.close();
      }
      seen += next;
    }
    expect(failures.length, 'readers failed').toBeGreaterThan(0);
    for (const failure of failures) expect(failure).toMatch(message);
    expect(seen, 'records read').toBeLessThan(5000);
  });
});

describe('sort-merge readers whose consumers wait', () => {
  test('hold one read buffer each, so that a reader whose consumer reads is served from a pool smaller than their read-ahead', async () => {
    const { env } = await environment({ readBuffers: 4 });
    const waiting = env.createPartition('job/3/0', 'sort-merge', 3);
    const reading = env.createPartition('job/3/1', 'sort-merge', 1);
    await writeAll(new RecordWriter<Row>(waiting, new RebalanceSelector(0), -1), rows(5000));
    await writeAll(new RecordWriter<Row>(reading, new RebalanceSelector(0), -1), rows(5000));
    // Three channels nobody polls yet (a join's probe side): each gets its first buffer, then waits.
    const probe = gateOver(env, [0, 1, 2].map((subpartition) => ({ address: { partitionId: waiting.id, subpartition }, remote: null })), 'probe');
    probe.gate.requestPartitions();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readSubpartition(env, reading, 0), 'the build side, read meanwhile').toEqual(rows(5000));
    const [a, b, c] = await readByChannel<Row>(probe.gate);
    expect([a.length, b.length, c.length]).toEqual([1667, 1667, 1666]);
  }, 20_000);
});

describe('blocking readers whose consumers wait', () => {
  test('read ahead only what their pool can spare, so that a reader whose consumer reads still gets buffers, and every subpartition reads exactly', async () => {
    const { env } = await environment({ budget: 64 * KiB });
    const partition = env.createPartition('job/4/0', 'blocking', 3);
    const { pool } = partition;
    await writeAll(new RecordWriter<Row>(partition, new RebalanceSelector(0), -1), rows(10_000));
    expect(partition.bytesSpilled, 'spilled: the data is larger than the budget').toBeGreaterThan(10 * pool.max * pool.segmentSize);
    // Two channels whose consumer took a buffer of each and reads no more: their views read ahead what they could.
    const waiting = gateOver(env, [0, 1].map((subpartition) => ({ address: { partitionId: partition.id, subpartition }, remote: null })), 'waiting');
    waiting.gate.requestPartitions();
    const held: NetworkBuffer[] = [];
    const channels = new Set<number>();
    while (channels.size < 2) {
      await waiting.gate.waitForData();
      const buffer = waiting.gate.pollNextAny();
      if (buffer === null) continue;
      held.push(buffer);
      channels.add(waiting.gate.lastChannel);
    }
    await eventually('read ahead: more buffers in use than taken', () => pool.buffersInUse > held.length);
    expect(pool.buffersInUse, "the waiting views left the pool its minimum, but for each one's first buffer").toBeLessThanOrEqual(pool.limit - pool.min + 2);
    expect(await readSubpartition(env, partition, 2), 'the third, read meanwhile').toEqual(rows(10_000).filter((row) => row[0] % 3 === 2));
    for (const buffer of held) buffer.recycle();
    waiting.gate.close();
    for (const subpartition of [0, 1]) expect(await readSubpartition(env, partition, subpartition)).toEqual(rows(10_000).filter((row) => row[0] % 3 === subpartition));
  }, 20_000);
});

import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import { ForwardSelector, RebalanceSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { KiB, MiB, expectNoLeak, localGate, readByChannel, tempDir, writeAll } from '../helpers/plane.js';

const cleanups: (() => void)[] = [];

afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function spillDir(): string {
  const { dir, remove } = tempDir('spill');
  cleanups.push(remove);
  return dir;
}

function spillFiles(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.spill'));
}

type Row = [number, string];

const TEXT = Array.from({ length: 4096 }, (_, i) => String.fromCharCode(0x20 + ((i * 7919) % 0x5e))).join('');

/** Record i: its number and about 1 KiB of text that depends on it, so that any mix-up shows. */
function row(i: number): Row {
  const start = i % 3000;
  return [i, TEXT.slice(start, start + 1000) + i];
}

/** Reads subpartition `channel` to its end, checking each record against the one expected in that place. */
async function readAndCheck(manager: ResultPartitionManager, id: string, channel: number, channels: number): Promise<number> {
  let next = channel;
  await new RecordReader<Row>(localGate(manager, [id], channel)).forEach((record) => {
    const expected = row(next);
    if (record[0] !== expected[0] || record[1] !== expected[1]) throw new Error(`channel ${channel}: expected record ${next}, got ${record[0]}`);
    next += channels;
  });
  return (next - channel) / channels;
}

describe('blocking partition (SpillableSubpartition)', () => {
  test('64 MiB of records on an 8 MiB budget: spills, reads back identical twice in turn and twice at once, no file left after release', async () => {
    const dir = spillDir();
    const segmentSize = 32 * KiB;
    const global = new NetworkBufferPool({ totalBytes: 16 * MiB, segmentSize });
    const pool = new BufferPool(global, 264, 300, 'spilling');
    const manager = new ResultPartitionManager();
    const partition = new ResultPartition({ id: 'job/s', type: 'blocking', numSubpartitions: 2, pool, spillDir: dir, memoryBudget: 8 * MiB });
    manager.register(partition);
    const count = 64 * 1024; // about 1 KiB each
    const records = (function* () {
      for (let i = 0; i < count; i++) yield row(i);
    })();
    await writeAll(new RecordWriter<Row>(partition, new RebalanceSelector(), -1), records);

    expect(partition.bytesSpilled).toBeGreaterThan(56 * MiB);
    const files = spillFiles(dir);
    expect(files.length).toBeGreaterThan(0);
    const onDisk = files.reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0);
    expect(onDisk).toBe(partition.bytesSpilled);
    expect(pool.buffersInUse * segmentSize, 'memory kept within budget').toBeLessThanOrEqual(8 * MiB);

    const readAll = (): Promise<number[]> => Promise.all([0, 1].map((c) => readAndCheck(manager, 'job/s', c, 2)));
    expect(await readAll(), 'first reader').toEqual([count / 2, count / 2]);
    expect(await readAll(), 'second reader, after the first').toEqual([count / 2, count / 2]);
    expect(await Promise.all([readAll(), readAll()]), 'two readers at once').toEqual([
      [count / 2, count / 2],
      [count / 2, count / 2],
    ]);

    manager.release('job/s');
    expect(spillFiles(dir)).toEqual([]);
    expectNoLeak(global, [pool]);
  });

  test('within its budget it keeps everything in memory, writes no file, and can be read again', async () => {
    const dir = spillDir();
    const global = new NetworkBufferPool({ totalBytes: 64 * 4 * KiB, segmentSize: 4 * KiB });
    const pool = new BufferPool(global, 40, 40);
    const manager = new ResultPartitionManager();
    const partition = new ResultPartition({ id: 'm', type: 'blocking', numSubpartitions: 1, pool, spillDir: dir });
    manager.register(partition);
    const records = Array.from({ length: 3000 }, (_, i) => `r${i}`);
    await writeAll(new RecordWriter<string>(partition, new ForwardSelector(), -1), records);
    expect(partition.bytesSpilled).toBe(0);
    expect(await readByChannel(localGate(manager, ['m'], 0))).toEqual([records]);
    expect(await readByChannel(localGate(manager, ['m'], 0))).toEqual([records]);
    expect(spillFiles(dir)).toEqual([]);
    manager.release('m');
    expectNoLeak(global, [pool]);
  });

  test('a reader that asks early gets nothing until the producer finished', async () => {
    const dir = spillDir();
    const global = new NetworkBufferPool({ totalBytes: 64 * 4 * KiB, segmentSize: 4 * KiB });
    const pool = new BufferPool(global, 8, 16);
    const manager = new ResultPartitionManager();
    const partition = new ResultPartition({ id: 'early', type: 'blocking', numSubpartitions: 1, pool, spillDir: dir, memoryBudget: 0 });
    manager.register(partition);
    let received = 0;
    const reading = new RecordReader<string>(localGate(manager, ['early'], 0)).forEach(() => {
      received++;
    });
    const writer = new RecordWriter<string>(partition, new ForwardSelector(), 0);
    for (let i = 0; i < 2000; i++) {
      const waiting = writer.emit(`early ${i}`);
      if (waiting) await waiting;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(received).toBe(0);
    await writer.close();
    await reading;
    expect(received).toBe(2000);
    manager.release('early');
    expectNoLeak(global, [pool]);
  });

  test('a pool that cannot grow to the max its budget assumes: the partition spills what it cannot keep, and finishes', async () => {
    const dir = spillDir();
    const global = new NetworkBufferPool({ totalBytes: 32 * 4 * KiB, segmentSize: 4 * KiB });
    const others = new BufferPool(global, 24, 24, 'others');
    const pool = new BufferPool(global, 4, 32, 'starved');
    const manager = new ResultPartitionManager();
    const partition = new ResultPartition({ id: 'starved', type: 'blocking', numSubpartitions: 2, pool, spillDir: dir });
    manager.register(partition);
    const records = Array.from({ length: 20_000 }, (_, i) => `record number ${i}`);
    const writing = writeAll(new RecordWriter<string>(partition, new RebalanceSelector(), -1), records);
    const stuck = new Promise<string>((resolve) => setTimeout(() => resolve('stuck'), 10_000).unref());
    expect(await Promise.race([writing.then(() => 'done'), stuck])).toBe('done');
    const [[even], [odd]] = await Promise.all([readByChannel(localGate(manager, ['starved'], 0)), readByChannel(localGate(manager, ['starved'], 1))]);
    expect(even).toEqual(records.filter((_, i) => i % 2 === 0));
    expect(odd).toEqual(records.filter((_, i) => i % 2 === 1));
    manager.release('starved');
    others.destroy();
    expectNoLeak(global, [pool, others]);
  });

  test('release with hundreds of buffers waiting to be written gives every one back', async () => {
    const dir = spillDir();
    const global = new NetworkBufferPool({ totalBytes: 1024 * 4 * KiB, segmentSize: 4 * KiB });
    const pool = new BufferPool(global, 8, 1000);
    const partition = new ResultPartition({ id: 'q', type: 'blocking', numSubpartitions: 1, pool, spillDir: dir, memoryBudget: 0 });
    const writer = new RecordWriter<string>(partition, new ForwardSelector(), -1);
    const page = 'p'.repeat(4 * KiB - 16);
    for (let i = 0; i < 600; i++) expect(writer.emit(page), 'the pool has room for all').toBeUndefined();
    expect(pool.buffersInUse).toBeGreaterThan(2 * 256);
    partition.release(new Error('canceled'));
    writer.abort();
    await vi.waitFor(() => expect(pool.buffersInUse).toBe(0));
    expect(spillFiles(dir)).toEqual([]);
    expectNoLeak(global, [pool]);
  });

  test('release while a reader reads fails it, deletes the files at once, and every buffer comes back', async () => {
    const dir = spillDir();
    const global = new NetworkBufferPool({ totalBytes: 64 * 4 * KiB, segmentSize: 4 * KiB });
    const pool = new BufferPool(global, 8, 16);
    const manager = new ResultPartitionManager();
    const partition = new ResultPartition({ id: 'r', type: 'blocking', numSubpartitions: 1, pool, spillDir: dir, memoryBudget: 0 });
    manager.register(partition);
    await writeAll(new RecordWriter<Row>(partition, new ForwardSelector(), -1), Array.from({ length: 2000 }, (_, i) => row(i)));
    expect(spillFiles(dir).length).toBe(1);
    let seen = 0;
    const reading = new RecordReader<Row>(localGate(manager, ['r'], 0)).forEach(() => {
      if (++seen === 100) manager.release('r', new Error('job canceled'));
    });
    await expect(reading).rejects.toThrow('subpartition 0 of partition r was released: job canceled');
    expect(spillFiles(dir)).toEqual([]);
    await vi.waitFor(() => expect(pool.buffersInUse, 'reads in flight land and are recycled').toBe(0));
    expectNoLeak(global, [pool]);
  });
});

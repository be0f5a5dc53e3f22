import { describe, expect, test } from 'vitest';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { InputGate } from '../../src/network/taskThread/consumer/InputGate.js';
import { LocalInputChannel } from '../../src/network/networkThread/consumer/LocalInputChannel.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import { ForwardSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { KiB, expectNoLeak, localGate, readByChannel, turn, writeAll } from '../helpers/plane.js';

const SEGMENT = 4 * KiB;
/** A record that fills most of a buffer, so that each record is one buffer. */
const FILLER = 'x'.repeat(SEGMENT - 64);

/** One finished pipelined partition per entry, holding that many one-record buffers. */
async function filledPartitions(buffersEach: number[]) {
  const global = new NetworkBufferPool({ totalBytes: 256 * SEGMENT, segmentSize: SEGMENT });
  const manager = new ResultPartitionManager();
  const pools = buffersEach.map((count, i) => {
    const pool = new BufferPool(global, 1, count + 2, `pool ${i}`);
    const partition = new ResultPartition({ id: `p${i}`, type: 'pipelined', numSubpartitions: 1, pool });
    manager.register(partition);
    const writer = new RecordWriter<[number, number, string]>(partition, new ForwardSelector(), 0);
    return { pool, written: writeAll(writer, Array.from({ length: count }, (_, n) => [i, n, FILLER] as [number, number, string])) };
  });
  await Promise.all(pools.map((p) => p.written));
  return { global, manager, pools: pools.map((p) => p.pool), ids: buffersEach.map((_, i) => `p${i}`) };
}

/** Round robin over the channels that still have data: the order a fair gate serves them in. */
function roundRobin(buffersEach: number[]): number[] {
  const left = [...buffersEach];
  const order: number[] = [];
  while (left.some((n) => n > 0)) {
    left.forEach((n, channel) => {
      if (n > 0) {
        order.push(channel);
        left[channel]--;
      }
    });
  }
  return order;
}

describe('InputGate', () => {
  test('channels full of data take turns, one buffer each; none starves', async () => {
    const buffersEach = [30, 5, 15, 1];
    const { global, manager, pools, ids } = await filledPartitions(buffersEach);
    const gate = new InputGate();
    gate.setChannels(ids.map((partitionId, i) => new LocalInputChannel(i, { partitionId, subpartition: 0 }, manager, gate)));
    gate.requestPartitions();
    await turn();
    const order: number[] = [];
    for (let buffer = gate.pollNext(); buffer !== null; buffer = gate.pollNext()) {
      order.push(gate.lastChannel);
      buffer.recycle();
    }
    expect(order).toEqual(roundRobin(buffersEach));
    expect(gate.isFinished).toBe(true);
    gate.close();
    expectNoLeak(global, pools);
  });

  test('records of several channels interleave, buffer by buffer, through the RecordReader', async () => {
    const buffersEach = [12, 12, 12];
    const { global, manager, pools, ids } = await filledPartitions(buffersEach);
    const channels: number[] = [];
    await new RecordReader<[number, number, string]>(localGate(manager, ids, 0)).forEach((record, channel) => {
      expect(record[0]).toBe(channel);
      channels.push(channel);
    });
    expect(channels).toEqual(roundRobin(buffersEach));
    expectNoLeak(global, pools);
  });

  test('a partition registered after the request is found by retrying', async () => {
    const global = new NetworkBufferPool({ totalBytes: 16 * SEGMENT, segmentSize: SEGMENT });
    const manager = new ResultPartitionManager();
    const reading = readByChannel<string>(localGate(manager, ['late'], 0));
    await new Promise((resolve) => setTimeout(resolve, 30));
    const pool = new BufferPool(global, 2, 4);
    const partition = new ResultPartition({ id: 'late', type: 'pipelined', numSubpartitions: 1, pool });
    manager.register(partition);
    await writeAll(new RecordWriter<string>(partition, new ForwardSelector()), ['finally']);
    expect(await reading).toEqual([['finally']]);
    expectNoLeak(global, [pool]);
  });

  test('a partition that never appears fails the reader, naming it, after the retry timeout', async () => {
    const manager = new ResultPartitionManager();
    const gate = new InputGate();
    const retry = { initialBackoffMs: 5, maxBackoffMs: 20, timeoutMs: 60 };
    gate.setChannels([new LocalInputChannel(0, { partitionId: 'ghost', subpartition: 0 }, manager, gate, retry)]);
    await expect(new RecordReader(gate).forEach(() => {})).rejects.toThrow('channel 0: partition ghost not found on this TaskManager');
  });

  test('a reader whose partition is released under it fails with PartitionReleasedError and holds no buffer', async () => {
    const global = new NetworkBufferPool({ totalBytes: 16 * SEGMENT, segmentSize: SEGMENT });
    const manager = new ResultPartitionManager();
    const pool = new BufferPool(global, 2, 4);
    const partition = new ResultPartition({ id: 'gone', type: 'pipelined', numSubpartitions: 1, pool });
    manager.register(partition);
    const writer = new RecordWriter<string>(partition, new ForwardSelector(), 0);
    let seen = 0;
    const reading = new RecordReader<string>(localGate(manager, ['gone'], 0)).forEach(() => {
      seen++;
    });
    writer.emit('one');
    await turn();
    manager.release('gone', new Error('the producer failed'));
    await expect(reading).rejects.toThrow('subpartition 0 of partition gone was released: the producer failed');
    expect(seen).toBe(1);
    writer.abort();
    expectNoLeak(global, [pool]);
  });

  test('setChannels refuses channels out of place', () => {
    const gate = new InputGate();
    const manager = new ResultPartitionManager();
    expect(() => gate.setChannels([new LocalInputChannel(1, { partitionId: 'x', subpartition: 0 }, manager, gate)])).toThrow(
      'channel at 0 has index 1',
    );
  });
});

/**
 * RemoteInputChannel, ConnectionManager and DataServer in one process, over real
 * TCP on 127.0.0.1: credit, floating buffers, connection sharing and idling,
 * partition-not-found retries, cancellation and a server going away.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { DataType, NetworkBuffer, UNPOOLED } from '../../src/network/buffer/NetworkBuffer.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { InputGate } from '../../src/network/taskThread/consumer/InputGate.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import { RemoteInputChannel, type RemoteAddress } from '../../src/network/networkThread/consumer/RemoteInputChannel.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import { RebalanceSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { ConnectionManager } from '../../src/network/networkThread/transport/ConnectionManager.js';
import { DataServer } from '../../src/network/networkThread/transport/DataServer.js';
import type { RetryPolicy } from '../../src/network/networkThread/consumer/LocalInputChannel.js';
import { EventType } from '../../src/network/Events.js';
import { RecordSerializer } from '../../src/network/taskThread/serialization/RecordSerializer.js';
import { bufferResponse, fakeServer } from '../fixtures/transportFakeServer.js';
import { eventually, sleep } from '../helpers/eventually.js';

let global: NetworkBufferPool;
let partitions: ResultPartitionManager;
let server: DataServer;
let address: RemoteAddress;
let connections: ConnectionManager;

beforeEach(async () => {
  global = new NetworkBufferPool({ totalBytes: 32 << 20, segmentSize: 4096 });
  partitions = new ResultPartitionManager();
  server = new DataServer(partitions, { log: () => {} });
  address = await server.listen();
  connections = new ConnectionManager({ idleTimeoutMs: 60_000, log: () => {} });
});

afterEach(async () => {
  await connections.close();
  await server.close();
});

/** Resolves once `condition` holds (the shared helper, polled every 5 ms). */
const until = (condition: () => boolean, what: string): Promise<boolean> => eventually(what, condition, { everyMs: 5 });

/** A pipelined partition with `count` buffers of 100 bytes queued on subpartition 0, byte i in buffer i. */
function queuedPartition(id: string, count: number, finish: boolean): ResultPartition {
  const partition = new ResultPartition({ id, type: 'pipelined', numSubpartitions: 1, pool: new BufferPool(global, 1, count + 1) });
  partitions.register(partition);
  for (let i = 0; i < count; i++) {
    const buffer = partition.pool.requestBuffer()!;
    buffer.segment.fill(i, 0, 100);
    buffer.size = 100;
    partition.add(buffer, 0);
  }
  if (finish) void partition.finish();
  return partition;
}

function gateOf(ids: string[], pool: BufferPool, options: { exclusiveBuffers?: number; retry?: RetryPolicy } = {}): { gate: InputGate; channels: RemoteInputChannel[] } {
  const gate = new InputGate();
  const channels = ids.map((id, i) => new RemoteInputChannel(i, { partitionId: id, subpartition: 0 }, address, connections, gate, pool, options));
  gate.setChannels(channels);
  return { gate, channels };
}

/** Polls the gate without recycling: what the channel could receive on its credit. */
async function pollHeld(gate: InputGate, held: NetworkBuffer[]): Promise<void> {
  for (let quiet = 0; quiet < 10; ) {
    const buffer = gate.pollNext();
    if (buffer === null) {
      quiet++;
      await sleep(5);
    } else {
      quiet = 0;
      held.push(buffer);
    }
  }
}

/** Writes `records` numbers round-robin into a new pipelined partition and finishes it. */
async function produce(id: string, subpartitions: number, records: number): Promise<void> {
  const partition = new ResultPartition({ id, type: 'pipelined', numSubpartitions: subpartitions, pool: new BufferPool(global, subpartitions + 1, 4 * subpartitions + 1) });
  partitions.register(partition);
  const writer = new RecordWriter<number>(partition, new RebalanceSelector());
  for (let i = 0; i < records; i++) {
    const waiting = writer.emit(i);
    if (waiting) await waiting;
  }
  await writer.close();
}

/** A pipelined partition with some records flushed and more to come. */
async function openPartition(id: string, records: number): Promise<void> {
  const partition = new ResultPartition({ id, type: 'pipelined', numSubpartitions: 1, pool: new BufferPool(global, 2, 5) });
  partitions.register(partition);
  const writer = new RecordWriter<number>(partition, new RebalanceSelector(), -1);
  for (let i = 0; i < records; i++) await writer.emit(i);
  writer.flushAll();
}

/** Reads subpartitions of a partition through one gate; returns each channel's records. */
async function read(id: string, subpartitions: number[], retry?: RetryPolicy): Promise<number[][]> {
  const pool = new BufferPool(global, 2 * subpartitions.length, 2 * subpartitions.length + 4);
  const gate = new InputGate();
  gate.setChannels(subpartitions.map((s, i) => new RemoteInputChannel(i, { partitionId: id, subpartition: s }, address, connections, gate, pool, { retry })));
  const records: number[][] = subpartitions.map(() => []);
  try {
    await new RecordReader<number>(gate).forEach((record, channel) => void records[channel].push(record));
  } finally {
    pool.destroy();
  }
  return records;
}

const range = (from: number, to: number, step: number): number[] => Array.from({ length: Math.ceil((to - from) / step) }, (_, i) => from + i * step);

describe('credit-based flow control', () => {
  test('a data buffer is sent only against credit, and every recycled buffer is credit again', async () => {
    queuedPartition('credit', 10, true);
    const pool = new BufferPool(global, 2, 2);
    const { gate } = gateOf(['credit'], pool, { exclusiveBuffers: 2 });
    gate.requestPartitions();
    const held: NetworkBuffer[] = [];
    await pollHeld(gate, held);
    expect(held.map((b) => b.segment[0])).toEqual([0, 1]);
    // Each recycled buffer lets exactly one more in, never more than the two credits.
    for (let next = 2; next < 10; next++) {
      held.shift()!.recycle();
      await pollHeld(gate, held);
      expect(held.map((b) => b.segment[0])).toEqual([next - 1, next]);
    }
    for (const buffer of held.splice(0)) buffer.recycle();
    await until(() => gate.pollNext() === null && gate.isFinished, 'the end of the partition');
    pool.destroy();
  });

  test('floating buffers follow the sender backlog and go back to the pool once it is drained', async () => {
    queuedPartition('floating', 20, false);
    const pool = new BufferPool(global, 1, 6);
    const { gate } = gateOf(['floating'], pool, { exclusiveBuffers: 1 });
    gate.requestPartitions();
    const held: NetworkBuffer[] = [];
    await pollHeld(gate, held);
    // One exclusive buffer, then floating ones as the announced backlog asks: the whole pool.
    expect(held.map((b) => b.segment[0])).toEqual([0, 1, 2, 3, 4, 5]);
    expect(pool.buffersInUse).toBe(6);
    for (let received = 6; received < 20; ) {
      held.shift()!.recycle();
      await until(() => {
        const buffer = gate.pollNext();
        if (buffer !== null) held.push(buffer);
        return buffer !== null;
      }, `buffer ${received}`);
      expect(held.at(-1)!.segment[0]).toBe(received++);
    }
    for (const buffer of held.splice(0)) buffer.recycle();
    // No backlog left: the channel keeps its exclusive buffer and returns the floating ones.
    await until(() => pool.buffersInUse === 1, 'floating buffers returned');
    gate.close();
    expect(pool.buffersInUse).toBe(0);
    pool.destroy();
  });
});

describe('connections', () => {
  test('one connection per TaskManager, shared by concurrent gates, reused by the next job, closed when idle', async () => {
    await connections.close();
    connections = new ConnectionManager({ idleTimeoutMs: 300, log: () => {} });
    const producing = Promise.all([produce('job1-a', 2, 20_000), produce('job1-b', 1, 5_000)]);
    const [a, b] = await Promise.all([read('job1-a', [0, 1]), read('job1-b', [0])]);
    await producing;
    expect(a).toEqual([range(0, 20_000, 2), range(1, 20_000, 2)]);
    expect(b).toEqual([range(0, 5_000, 1)]);
    expect(connections.connectionCount).toBe(1);
    expect(server.connectionCount).toBe(1);
    const shared = connections.connection(address);

    void produce('job2', 1, 1000);
    expect(await read('job2', [0])).toEqual([range(0, 1000, 1)]);
    expect(connections.connection(address)).toBe(shared);

    await until(() => connections.connectionCount === 0 && server.connectionCount === 0, 'the idle connection to close');
    void produce('job3', 1, 1000);
    expect(await read('job3', [0])).toEqual([range(0, 1000, 1)]);
    expect(connections.connection(address)).not.toBe(shared);
  });

  test('a partition registered late is found by retrying with backoff', async () => {
    const reading = read('late', [0], { initialBackoffMs: 10, maxBackoffMs: 40, timeoutMs: 30_000 });
    // A pause, not a wait: the partition comes after some requests (however few a loaded machine makes), which retry.
    await sleep(150);
    await produce('late', 1, 3000);
    expect(await reading).toEqual([range(0, 3000, 1)]);
  });

  test('a partition that never appears fails its channel with a message naming it and the TaskManager', async () => {
    await expect(read('nowhere', [0], { initialBackoffMs: 10, maxBackoffMs: 40, timeoutMs: 300 })).rejects.toThrow(
      new RegExp(`channel 0 \\(partition nowhere, subpartition 0, TaskManager 127\\.0\\.0\\.1:${address.port}\\): partition nowhere not found on TaskManager 127\\.0\\.0\\.1:${address.port} after \\d+ requests`),
    );
  });

  test('a cancelled request makes the producer drop its queue and recycle its buffers', async () => {
    const partition = queuedPartition('cancelled', 30, false);
    const pool = new BufferPool(global, 2, 4);
    const { gate } = gateOf(['cancelled'], pool);
    gate.requestPartitions();
    await until(() => server.requestCount === 1, 'the request');
    const held: NetworkBuffer[] = [];
    await until(() => held.push(...[gate.pollNext()].filter((b) => b !== null)) > 0, 'the first buffer');
    expect(partition.pool.buffersInUse).toBeGreaterThan(20);
    gate.close();
    await until(() => server.requestCount === 0 && partition.pool.buffersInUse === 0, 'the queue to be dropped');
    // A later buffer of the producer is dropped at once as well, and the producer learns its consumer is gone.
    const late = partition.pool.requestBuffer()!;
    late.size = 1;
    expect(() => partition.add(late, 0)).toThrow(expect.objectContaining({ code: 'SPW_ERR_PARTITION_RELEASED' }));
    expect(partition.pool.buffersInUse).toBe(0);
    held[0].recycle();
    pool.destroy();
  });

  test('a request that fails in the middle of a batch gets its error frame between whole frames: the connection stays in step', async () => {
    const fresh = (id: string): ResultPartition => {
      const partition = new ResultPartition({ id, type: 'pipelined', numSubpartitions: 1, pool: new BufferPool(global, 1, 4) });
      partitions.register(partition);
      return partition;
    };
    const healthy = fresh('healthy');
    fresh('doomed');
    const pool = new BufferPool(global, 4, 4);
    const { gate, channels } = gateOf(['healthy', 'doomed'], pool);
    gate.requestPartitions();
    await until(() => server.requestCount === 2, 'both requests');
    const add = (byte: number): void => {
      const buffer = healthy.pool.requestBuffer()!;
      buffer.segment.fill(byte, 0, 100);
      buffer.size = 100;
      healthy.add(buffer, 0);
    };
    // In one tick: a buffer for one request, and the other request's partition released.
    add(0xab);
    partitions.release('doomed', new Error('job canceled'));
    let first: NetworkBuffer | null = null;
    await until(() => (first ??= gate.pollNext()) !== null, 'the healthy buffer');
    expect(first!.bytes()).toEqual(Buffer.alloc(100, 0xab));
    first!.recycle();
    await until(() => (() => { try { channels[1].pollNext(); return false; } catch { return true; } })(), 'the doomed channel to fail');
    expect(() => channels[1].pollNext()).toThrow(expect.objectContaining({ code: 'SPW_ERR_PARTITION_RELEASED', message: expect.stringContaining('job canceled') }));
    // The same connection goes on carrying the healthy request.
    add(0xcd);
    let second: NetworkBuffer | null = null;
    await until(() => (second ??= channels[0].pollNext()) !== null, 'the next healthy buffer');
    expect(second!.bytes()).toEqual(Buffer.alloc(100, 0xcd));
    second!.recycle();
    expect(connections.connectionCount).toBe(1);
    gate.close();
    pool.destroy();
    partitions.releaseWhere(() => true);
  });

  test('a server that goes away fails the channels reading from it at once, with the reason', async () => {
    await Promise.all([openPartition('stuck-1', 100), openPartition('stuck-2', 100)]);
    const pool = new BufferPool(global, 4, 4);
    const { gate, channels } = gateOf(['stuck-1', 'stuck-2'], pool);
    const reading = new RecordReader(gate).forEach(() => {});
    await until(() => server.requestCount === 2, 'both requests');
    const failed = expect(reading).rejects.toMatchObject({ code: 'SPW_ERR_CONNECTION_LOST' });
    await server.close();
    await failed;
    for (const channel of channels) expect(() => channel.pollNext()).toThrow(expect.objectContaining({ code: 'SPW_ERR_CONNECTION_LOST' }));
    pool.destroy();
    partitions.releaseWhere(() => true);
    expect(global.segmentsInUse).toBe(0);
  });

  test('a TaskManager that is not there fails the channel with its address', async () => {
    const gone = await fakeServer(() => {});
    gone.close();
    const pool = new BufferPool(global, 2, 2);
    const gate = new InputGate();
    gate.setChannels([new RemoteInputChannel(0, { partitionId: 'p', subpartition: 0 }, gone.address, connections, gate, pool)]);
    await expect(new RecordReader(gate).forEach(() => {})).rejects.toThrow(
      new RegExp(`connection to TaskManager 127\\.0\\.0\\.1:${gone.address.port} failed: connect ECONNREFUSED`),
    );
    pool.destroy();
  });

  test('a channel released in the middle of a buffer gives its memory back and leaves the connection in step', async () => {
    const serializer = new RecordSerializer();
    const records = new NetworkBuffer(Buffer.alloc(4096), UNPOOLED);
    for (const record of [1, 2, 3]) {
      serializer.serialize(record);
      serializer.copyTo(records);
    }
    const half = bufferResponse(0, 0, 0, DataType.DATA, Buffer.alloc(4096, 7));
    let halfSent: () => void = () => {};
    const sent = new Promise<void>((resolve) => (halfSent = resolve));
    const fake = await fakeServer(({ receiverId, partitionId }, socket) => {
      if (partitionId === 'half') {
        socket.write(half.subarray(0, 2000));
        halfSent();
        return;
      }
      socket.write(half.subarray(2000));
      socket.write(bufferResponse(receiverId, 0, 0, DataType.DATA, records.bytes()));
      socket.write(bufferResponse(receiverId, 1, 0, DataType.EVENT, Buffer.of(EventType.END_OF_PARTITION)));
    });
    try {
      const halfPool = new BufferPool(global, 2, 2);
      const halfGate = new InputGate();
      halfGate.setChannels([new RemoteInputChannel(0, { partitionId: 'half', subpartition: 0 }, fake.address, connections, halfGate, halfPool)]);
      halfGate.requestPartitions();
      await sent;
      await sleep(50);
      halfGate.close();
      expect(halfPool.buffersInUse).toBe(0);
      halfPool.destroy();

      const pool = new BufferPool(global, 2, 2);
      const gate = new InputGate();
      gate.setChannels([new RemoteInputChannel(0, { partitionId: 'whole', subpartition: 0 }, fake.address, connections, gate, pool)]);
      const got: number[] = [];
      await new RecordReader<number>(gate).forEach((record) => void got.push(record));
      expect(got).toEqual([1, 2, 3]);
      expect(connections.connectionCount).toBe(1);
      pool.destroy();
    } finally {
      fake.close();
    }
  });
});

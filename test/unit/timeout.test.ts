import { afterEach, describe, expect, test, vi } from 'vitest';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import type { NetworkBuffer } from '../../src/network/buffer/NetworkBuffer.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import type { ResultSubpartitionView } from '../../src/network/networkThread/partition/ResultSubpartition.js';
import { NEED_MORE, RecordDeserializer } from '../../src/network/taskThread/serialization/RecordDeserializer.js';
import { ForwardSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { DEFAULT_BUFFER_TIMEOUT, RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { KiB, expectNoLeak, localGate } from '../helpers/plane.js';

afterEach(() => {
  vi.useRealTimers();
});

function setup(bufferTimeout?: number) {
  const global = new NetworkBufferPool({ totalBytes: 16 * 4 * KiB, segmentSize: 4 * KiB });
  const manager = new ResultPartitionManager();
  const pool = new BufferPool(global, 2, 4);
  const partition = new ResultPartition({ id: 't', type: 'pipelined', numSubpartitions: 1, pool });
  manager.register(partition);
  const writer = new RecordWriter<string>(partition, new ForwardSelector(), bufferTimeout);
  return { global, manager, pool, partition, writer };
}

/** The records in the next buffer the view has, or null if it has none. */
function pollRecords(view: ResultSubpartitionView): unknown[] | null {
  const buffer: NetworkBuffer | null = view.pollNext();
  if (buffer === null) return null;
  if (buffer.isEvent) {
    buffer.recycle();
    return ['<end>'];
  }
  const deserializer = new RecordDeserializer();
  deserializer.setNextBuffer(buffer);
  const records: unknown[] = [];
  for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) records.push(record);
  return records;
}

describe('buffer timeout (fake timers)', () => {
  test('default 100 ms: a partly filled buffer is handed over within the timeout, not at once', async () => {
    vi.useFakeTimers();
    expect(DEFAULT_BUFFER_TIMEOUT).toBe(100);
    const { writer, partition, global, pool } = setup();
    const view = partition.createSubpartitionView(0, () => {});
    writer.emit('first');
    expect(pollRecords(view)).toBeNull();
    vi.advanceTimersByTime(100);
    expect(pollRecords(view)).toEqual(['first']);
    vi.advanceTimersByTime(30);
    writer.emit('second');
    writer.emit('third');
    expect(pollRecords(view)).toBeNull();
    vi.advanceTimersByTime(100);
    expect(pollRecords(view)).toEqual(['second', 'third']);
    await writer.close();
    expect(vi.getTimerCount(), 'close() stops the timer').toBe(0);
    expect(pollRecords(view)).toEqual(['<end>']);
    view.release();
    expectNoLeak(global, [pool]);
  });

  test('-1: only full buffers and close() hand data over', async () => {
    vi.useFakeTimers();
    const { writer, partition } = setup(-1);
    const view = partition.createSubpartitionView(0, () => {});
    writer.emit('lonely');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(60_000);
    expect(pollRecords(view)).toBeNull();
    await writer.close();
    expect(pollRecords(view)).toEqual(['lonely']);
    expect(pollRecords(view)).toEqual(['<end>']);
  });

  test('0: every record is handed over on its own, at once', async () => {
    vi.useFakeTimers();
    const { writer, partition } = setup(0);
    const view = partition.createSubpartitionView(0, () => {});
    for (const record of ['a', 'b', 'c']) {
      writer.emit(record);
      expect(view.backlog).toBe(1);
      expect(pollRecords(view)).toEqual([record]);
    }
    await writer.close();
    expect(pollRecords(view)).toEqual(['<end>']);
  });

  test('a timed flush that has to wait for a buffer holds back later records until it is done; order is kept', async () => {
    vi.useFakeTimers();
    const { writer, partition, global, pool } = setup(100);
    const view = partition.createSubpartitionView(0, () => {});
    writer.emit('zero'); // the first record goes alone: its size is the estimate for the next
    vi.advanceTimersByTime(100);
    const held = [pool.requestBuffer(), pool.requestBuffer(), pool.requestBuffer()];
    expect(pool.requestBuffer(), 'the pool is exhausted').toBeNull();
    expect(writer.emit('first')).toBeUndefined();
    vi.advanceTimersByTime(100);
    const second = writer.emit('second');
    expect(second, 'waits for the timed flush').toBeInstanceOf(Promise);
    expect(pollRecords(view)).toEqual(['zero']);
    expect(pollRecords(view)).toBeNull();
    for (const buffer of held) buffer?.recycle();
    await second;
    expect(pollRecords(view)).toEqual(['first']);
    writer.emit('third');
    await writer.close();
    expect(pollRecords(view)).toEqual(['second', 'third']);
    expect(pollRecords(view)).toEqual(['<end>']);
    view.release();
    expectNoLeak(global, [pool]);
  });
  test('a timed flush while an emit waits for a buffer leaves that batch alone: nothing lost, order kept', async () => {
    vi.useFakeTimers();
    const { writer, partition, global, pool } = setup(100);
    const view = partition.createSubpartitionView(0, () => {});
    writer.emit('zero');
    vi.advanceTimersByTime(100);
    const held = [pool.requestBuffer(), pool.requestBuffer(), pool.requestBuffer()];
    const records: string[] = [];
    let waiting: void | Promise<void> = undefined;
    for (let i = 0; !waiting; i++) {
      records.push(`r${i}`);
      waiting = writer.emit(`r${i}`);
    }
    vi.advanceTimersByTime(300);
    for (const buffer of held) buffer?.recycle();
    const received: unknown[] = [];
    const drain = (): void => {
      while (received.at(-1) !== '<end>') {
        const batch = pollRecords(view);
        if (batch === null) return;
        received.push(...batch);
      }
    };
    drain();
    await waiting;
    await writer.close();
    drain();
    expect(received).toEqual(['zero', ...records, '<end>']);
    view.release();
    expectNoLeak(global, [pool]);
  });
  test('a record msgpackr cannot pack, met by a timed flush, fails the writer: the next emit and close() throw, nothing crashes', async () => {
    vi.useFakeTimers();
    const { partition, global, pool } = setup(100);
    const writer = new RecordWriter<unknown>(partition, new ForwardSelector());
    const view = partition.createSubpartitionView(0, () => {});
    writer.emit('first');
    writer.emit(2n ** 64n);
    vi.advanceTimersByTime(100);
    expect(() => writer.emit('after')).toThrow(expect.objectContaining({ code: 'SPW_ERR_UNSERIALIZABLE_RECORD' }));
    await expect(writer.close()).rejects.toMatchObject({ code: 'SPW_ERR_UNSERIALIZABLE_RECORD' });
    expect(pollRecords(view), 'a failed writer hands nothing over, and no end of partition').toBeNull();
    writer.abort();
    view.release();
    partition.release();
    expectNoLeak(global, [pool]);
  });

  test('with timeout 0 the emit of a record that cannot be packed throws, and close() throws it again', async () => {
    const { partition } = setup(0);
    const writer = new RecordWriter<unknown>(partition, new ForwardSelector(), 0);
    writer.emit('first');
    expect(() => writer.emit(2n ** 64n)).toThrow(expect.objectContaining({ code: 'SPW_ERR_UNSERIALIZABLE_RECORD' }));
    await expect(writer.close()).rejects.toMatchObject({ code: 'SPW_ERR_UNSERIALIZABLE_RECORD' });
  });

  test('close() twice: the second waits for the first', async () => {
    const { writer, partition, global, pool } = setup(-1);
    const view = partition.createSubpartitionView(0, () => {});
    writer.emit('only');
    const first = writer.close();
    expect(writer.close()).toBe(first);
    await first;
    expect(pollRecords(view)).toEqual(['only']);
    expect(pollRecords(view)).toEqual(['<end>']);
    view.release();
    expectNoLeak(global, [pool]);
  });
});

describe('buffer timeout (real timers, through the gate)', () => {
  /** Starts reading; resolves `first` with the first record that arrives. */
  function startReading(manager: ResultPartitionManager) {
    const received: string[] = [];
    let arrived: () => void = () => {};
    const first = new Promise<void>((resolve) => (arrived = resolve));
    const done = new RecordReader<string>(localGate(manager, ['t'], 0)).forEach((record) => {
      received.push(record);
      arrived();
    });
    return { received, first, done };
  }

  test('100: a single record reaches the consumer before close()', async () => {
    const { writer, manager, global, pool } = setup(100);
    const reading = startReading(manager);
    writer.emit('hello');
    await reading.first;
    expect(reading.received).toEqual(['hello']);
    await writer.close();
    await reading.done;
    expectNoLeak(global, [pool]);
  });

  test('-1: a single record does not reach the consumer before close(), then does', async () => {
    const { writer, manager, global, pool } = setup(-1);
    const reading = startReading(manager);
    writer.emit('hello');
    await new Promise((resolve) => setTimeout(resolve, 3 * DEFAULT_BUFFER_TIMEOUT));
    expect(reading.received).toEqual([]);
    await writer.close();
    await reading.done;
    expect(reading.received).toEqual(['hello']);
    expectNoLeak(global, [pool]);
  });
});

import { describe, expect, test } from 'vitest';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import { ForwardSelector, KeyGroupSelector, type ChannelSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { KiB, expectNoLeak, localGate, readByChannel, track, turn, writeAll } from '../helpers/plane.js';

const SEGMENT = 4 * KiB;

type Row = [number, string];

function rows(count: number): Row[] {
  return Array.from({ length: count }, (_, i) => [i, `row ${i} `.padEnd(24 + (i % 17), '.')]);
}

/** A producer that counts what it emitted and the most buffers its pool ever lent. */
class Producer<T> {
  emitted = 0;
  maxInUse = 0;
  readonly done: Promise<void>;

  constructor(writer: RecordWriter<T>, pool: BufferPool, records: readonly T[]) {
    this.done = (async () => {
      for (const record of records) {
        const waiting = writer.emit(record);
        this.maxInUse = Math.max(this.maxInUse, pool.buffersInUse);
        if (waiting) await waiting;
        this.emitted++;
      }
      await writer.close();
    })();
  }
}

/** Lets the event loop run (timers included) long enough for a producer that could move to move. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await turn();
  await new Promise((resolve) => setTimeout(resolve, 50));
  for (let i = 0; i < 5; i++) await turn();
}

function setup(min: number, max: number, channels: number, id = 'p') {
  const global = new NetworkBufferPool({ totalBytes: 64 * SEGMENT, segmentSize: SEGMENT });
  const manager = new ResultPartitionManager();
  const pool = new BufferPool(global, min, max, id);
  const partition = new ResultPartition({ id, type: 'pipelined', numSubpartitions: channels, pool });
  manager.register(partition);
  return { global, manager, pool, partition };
}

describe('backpressure', () => {
  test('a producer whose consumer does not read stops with its pool exhausted, resumes when it reads, and loses nothing', async () => {
    const { global, manager, pool, partition } = setup(2, 6, 1);
    const records = rows(20_000);
    const producer = new Producer(new RecordWriter<Row>(partition, new ForwardSelector(), -1), pool, records);
    const gate = localGate(manager, ['p'], 0);
    gate.requestPartitions(); // connected, but not reading
    const finished = track(producer.done);
    await settle();
    const stoppedAt = producer.emitted;
    expect(stoppedAt).toBeGreaterThan(0);
    expect(stoppedAt).toBeLessThan(records.length);
    expect(pool.buffersInUse).toBe(6);
    expect(global.segmentsInUse, 'memory stays at the pool maximum').toBe(6);
    await settle();
    expect(producer.emitted, 'still stopped').toBe(stoppedAt);
    expect(finished.settled).toBe(false);

    const [received] = await readByChannel<Row>(gate);
    await producer.done;
    expect(received).toEqual(records);
    expect(producer.maxInUse).toBeLessThanOrEqual(6);
    expectNoLeak(global, [pool]);
  });

  test('one consumer that does not read stops a producer that feeds several; all arrives once it reads', async () => {
    const { global, manager, pool, partition } = setup(3, 8, 2);
    const records = rows(20_000);
    const selector = new KeyGroupSelector<Row>((row) => row[0]);
    const producer = new Producer(new RecordWriter<Row>(partition, selector, -1), pool, records);
    const reading = readByChannel<Row>(localGate(manager, ['p'], 1));
    const idle = localGate(manager, ['p'], 0);
    idle.requestPartitions();
    await settle();
    const stoppedAt = producer.emitted;
    expect(stoppedAt).toBeLessThan(records.length);
    expect(pool.buffersInUse).toBe(8);
    await settle();
    expect(producer.emitted).toBe(stoppedAt);

    const [[toOne], [toZero]] = await Promise.all([reading, readByChannel<Row>(idle), producer.done]);
    const expected = (channel: number): Row[] => records.filter((row) => selector.selectChannel(row) === channel);
    expect(toZero).toEqual(expected(0));
    expect(toOne).toEqual(expected(1));
    expectNoLeak(global, [pool]);
  });

  test('a writer waiting for a buffer keeps its batch intact while other writers in the process pack theirs', async () => {
    const a = setup(1, 2, 1, 'a');
    const b = setup(1, 2, 1, 'b');
    const big = (tag: string, i: number): Row => [i, `${tag}:${i}:`.padEnd(3000, tag)];
    const aRecords = Array.from({ length: 20 }, (_, i) => big('A', i));
    const bRecords = Array.from({ length: 200 }, (_, i) => big('B', i));
    const aProducer = new Producer(new RecordWriter<Row>(a.partition, new ForwardSelector(), -1), a.pool, aRecords);
    const aDone = track(aProducer.done);
    const aGate = localGate(a.manager, ['a'], 0);
    await settle();
    // Each 3 KB record goes as a batch of its own (the first one measured the size), and the pool's two
    // 4 KiB buffers fill: a writes into them and waits with the rest of a record staged.
    expect(aDone.settled, 'a waits with a batch staged').toBe(false);
    expect(a.pool.buffersInUse).toBe(2);
    const bRead = readByChannel<Row>(localGate(b.manager, ['b'], 0));
    await writeAll(new RecordWriter<Row>(b.partition, new ForwardSelector(), -1), bRecords);
    expect((await bRead)[0]).toEqual(bRecords);
    const [aReceived] = await readByChannel<Row>(aGate);
    await aProducer.done;
    expect(aReceived).toEqual(aRecords);
    expectNoLeak(a.global, [a.pool]);
    expectNoLeak(b.global, [b.pool]);
  });

  test('records far larger than the ones before them do not pile up into one huge batch', async () => {
    const { global, pool, partition } = setup(1, 4, 1);
    const writer = new RecordWriter<string>(partition, new ForwardSelector(), -1);
    const view = partition.createSubpartitionView(0, () => {});
    for (let i = 0; i < 1000; i++) expect(writer.emit('a')).toBeUndefined();
    await writer.flushAll();
    let accepted = 0;
    const big = 'b'.repeat(8 * KiB);
    let waiting = writer.emit(big);
    for (; waiting === undefined; waiting = writer.emit(big)) accepted++;
    // Without a check of the estimate, 1-byte records would let about 2000 of these wait for one batch.
    expect(accepted).toBeLessThanOrEqual(64);
    writer.abort();
    view.release();
    partition.release();
    await expect(waiting).rejects.toMatchObject({ code: 'SPW_ERR_TASK_CANCELED' });
    expectNoLeak(global, [pool]);
  });

  test.each([
    ['a pool no larger than its channels', 1, 2],
    ['a pool that cannot grow to its max', 1, 40],
  ])('no buffer timeout and %s: the writer still gets through', async (_, min, max) => {
    const { global, manager, pool, partition } = setup(min, max, 4);
    if (max > 4) new BufferPool(global, 64 - min, 64 - min, 'the rest'); // leaves this pool nothing to borrow
    const selector: ChannelSelector<Row> = new KeyGroupSelector<Row>((row) => row[0]);
    const records = rows(5_000);
    const reads = [0, 1, 2, 3].map((c) => readByChannel<Row>(localGate(manager, ['p'], c)));
    const producer = new Producer(new RecordWriter<Row>(partition, selector, -1), pool, records);
    const stuck = new Promise<string>((resolve) => setTimeout(() => resolve('stuck'), 10_000).unref());
    expect(await Promise.race([producer.done.then(() => 'done'), stuck])).toBe('done');
    const received = await Promise.all(reads);
    received.forEach(([got], c) => expect(got).toEqual(records.filter((row) => selector.selectChannel(row) === c)));
    expect(pool.buffersInUse).toBe(0);
  });
});

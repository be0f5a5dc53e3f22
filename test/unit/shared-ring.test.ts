import { afterEach, expect, test, vi } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { createRing, RingReader, RingWriter } from '../../src/network/handover/SharedRing.js';
import { eventually } from '../helpers/eventually.js';

const readers: RingReader[] = [];

afterEach(() => {
  vi.restoreAllMocks();
  for (const reader of readers.splice(0)) reader.stop();
});

function reading(memory: SharedArrayBuffer): { got: number[]; reader: RingReader } {
  const got: number[] = [];
  const reader = new RingReader(memory, (ints) => got.push(...ints));
  readers.push(reader);
  void reader.start();
  return { got, reader };
}

/** Int 2 of the ring, SLEEPING: 1 while the reader waits for the tail to move. */
const sleeping = (memory: SharedArrayBuffer): boolean => Atomics.load(new Int32Array(memory), 2) === 1;

test('entries of random sizes arrive whole and in order through a small ring, many times round it', async () => {
  const random = seededRandom(7);
  const memory = createRing(64);
  const writer = new RingWriter(memory);
  const { got } = reading(memory);
  const sent: number[] = [];
  for (let batch = 0; batch < 200; batch++) {
    for (let e = 0; e < 1 + Math.floor(random() * 8); e++) {
      const entry = Array.from({ length: 1 + Math.floor(random() * 20) }, () => Math.floor(random() * 2 ** 31));
      sent.push(...entry);
      writer.write(entry);
    }
    writer.publish();
    // Sometimes the reader catches up before the next batch, sometimes the ring fills first.
    if (random() < 0.5) await new Promise((resolve) => setImmediate(resolve));
  }
  await eventually('every entry read', () => got.length === sent.length, { everyMs: 5 });
  expect(got).toEqual(sent);
});

test('a reader whose notify is lost still reads what was published: its RECHECK_MS timer wakes it', async () => {
  const memory = createRing(64);
  const writer = new RingWriter(memory);
  const { got } = reading(memory);
  await eventually('the reader asleep on the empty ring', () => sleeping(memory), { everyMs: 5 });
  // As seen on Node 20: the writer notifies, and the sleeping reader is not woken.
  const notify = vi.spyOn(Atomics, 'notify').mockReturnValueOnce(0);
  writer.write([1, 2, 3]);
  writer.publish();
  expect(notify).toHaveBeenCalled();
  await eventually('the entry read', () => got.length === 3, { everyMs: 5 });
  expect(got).toEqual([1, 2, 3]);
});

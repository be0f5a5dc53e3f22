import { afterEach, expect, test, vi } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { createRing, RECHECK_MS, RingReader, RingWriter } from '../../src/network/thread/SharedRing.js';

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

async function until(condition: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

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
  await until(() => got.length === sent.length, 5_000);
  expect(got).toEqual(sent);
});

test('a reader whose notify is lost still reads what was published, within a few RECHECK_MS', async () => {
  const memory = createRing(64);
  const writer = new RingWriter(memory);
  const { got } = reading(memory);
  // Let the reader go to sleep on the empty ring.
  await new Promise((resolve) => setTimeout(resolve, 20));
  // As seen on Node 20: the writer notifies, and the sleeping reader is not woken.
  const notify = vi.spyOn(Atomics, 'notify').mockReturnValueOnce(0);
  writer.write([1, 2, 3]);
  writer.publish();
  expect(notify).toHaveBeenCalled();
  await until(() => got.length === 3, 10 * RECHECK_MS);
  expect(got).toEqual([1, 2, 3]);
});

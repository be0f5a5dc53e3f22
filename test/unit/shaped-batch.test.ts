import { Packr, Unpackr } from 'msgpackr';
import { describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { NetworkBuffer } from '../../src/network/buffer/NetworkBuffer.js';
import { NEED_MORE, RecordDeserializer } from '../../src/network/taskThread/serialization/RecordDeserializer.js';
import { LENGTH_BYTES, RecordSerializer, SHAPED_BATCH } from '../../src/network/taskThread/serialization/RecordSerializer.js';
import { SKIP_AFTER_MISS } from '../../src/network/taskThread/serialization/ShapedBatch.js';
import { KiB, seedCount, withSeed } from '../helpers/plane.js';
import { ShapedStream, Soup, firstSequenceDifference, type Random } from '../helpers/records.js';

const soup = new Soup(64 * KiB + 1, 1024);

/**
 * Records in batches of 1 to maxBatch through one serializer and one deserializer (`unit`
 * records at a time: 2 for records after their timestamps), over buffers of `capacity`
 * bytes (a batch may span several); the records read back.
 */
function carry(records: readonly unknown[], capacity: number, random: Random, maxBatch: number, unit = 1): unknown[] {
  const serializer = new RecordSerializer();
  const deserializer = new RecordDeserializer();
  const out: unknown[] = [];
  const deliver = (buffer: NetworkBuffer): void => {
    deserializer.setNextBuffer(buffer);
    for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) out.push(record);
  };
  let buffer = new NetworkBuffer(Buffer.alloc(capacity), { recycle: () => {} });
  for (let i = 0; i < records.length; ) {
    const end = Math.min(records.length, i + unit * (1 + Math.floor(random() * maxBatch)));
    while (i < end) serializer.add(records[i++]);
    serializer.stage();
    while (!serializer.copyTo(buffer)) {
      deliver(buffer);
      buffer = new NetworkBuffer(Buffer.alloc(capacity), { recycle: () => {} });
    }
    deliver(buffer);
    buffer = new NetworkBuffer(Buffer.alloc(capacity), { recycle: () => {} });
  }
  expect(deserializer.hasPartialRecord).toBe(false);
  return out;
}

/** Whether these records, staged as one batch, are written shaped (the length word's bit 31). */
function writtenShaped(serializer: RecordSerializer, records: readonly unknown[]): boolean {
  for (const record of records) serializer.add(record);
  serializer.stage();
  const buffer = new NetworkBuffer(Buffer.alloc(1 << 20), { recycle: () => {} });
  expect(serializer.copyTo(buffer)).toBe(true);
  return buffer.segment.readUInt32BE(0) >= SHAPED_BATCH;
}

/** One batch there and back, and whether it went shaped. */
function oneBatch(records: readonly unknown[]): { back: unknown[]; shaped: boolean } {
  const serializer = new RecordSerializer();
  for (const record of records) serializer.add(record);
  serializer.stage();
  const buffer = new NetworkBuffer(Buffer.alloc(1 << 20), { recycle: () => {} });
  expect(serializer.copyTo(buffer)).toBe(true);
  const shaped = buffer.segment.readUInt32BE(0) >= SHAPED_BATCH;
  const deserializer = new RecordDeserializer();
  deserializer.setNextBuffer(buffer);
  const back: unknown[] = [];
  for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) back.push(record);
  return { back, shaped };
}

/** What msgpackr alone gives back for a record, as the engine packed it before shaped batches. */
function throughMsgpackr(record: unknown): unknown {
  return new Unpackr({ sequential: true }).unpack(new Packr({ sequential: true }).pack(record));
}

describe('shaped batches', () => {
  const seeds = seedCount(20);
  // Shared memory is what a local channel or the network thread hands a task: read in place where a batch is shaped, so each
  // buffer is poisoned once recycled, and a record that still pointed into it would come back wrong.
  test.each(['own', 'shared'] as const)(`random shapes and values, changing mid-stream, come back exact and in order, over buffers they span, in %s memory (${seeds} seeds)`, async (memory) => {
    let shapedBatches = 0;
    let batches = 0;
    for (let seed = 1; seed <= seeds; seed++) {
      await withSeed(seed, () => {
        const random = seededRandom(3000 + seed);
        const stream = new ShapedStream(random, soup, 0.001 + random() * 0.01);
        const records = Array.from({ length: 500 + Math.floor(random() * 3000) }, () => stream.next());
        const capacity = Math.round(64 * 1024 ** random());
        const serializer = new RecordSerializer();
        const deserializer = new RecordDeserializer();
        const out: unknown[] = [];
        let delivered = 0;
        const recycled = new Set<Buffer>();
        const fresh = (): NetworkBuffer => {
          const segment = memory === 'shared' ? Buffer.from(new SharedArrayBuffer(capacity)) : Buffer.alloc(capacity);
          return new NetworkBuffer(segment, {
            recycle: (done) => {
              recycled.add(done);
              done.fill(0xa5);
            },
          });
        };
        let buffer = fresh();
        const deliver = (): void => {
          deserializer.setNextBuffer(buffer);
          delivered++;
          for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) out.push(record);
          buffer = fresh();
        };
        for (let i = 0; i < records.length; ) {
          const end = Math.min(records.length, i + 1 + Math.floor(random() * 100));
          while (i < end) serializer.add(records[i++]);
          const at = buffer.size;
          serializer.stage();
          let complete = serializer.copyTo(buffer);
          // The batch's length word is the first 4 bytes it wrote, possibly split over two buffers.
          const head = buffer.segment.subarray(at, buffer.size);
          if (head.length >= LENGTH_BYTES) {
            batches++;
            if (head.readUInt32BE(0) >= SHAPED_BATCH) shapedBatches++;
          }
          while (!complete) {
            deliver();
            complete = serializer.copyTo(buffer);
          }
          if (random() < 0.3) deliver();
        }
        if (buffer.size > 0) deliver();
        expect(deserializer.hasPartialRecord).toBe(false);
        expect(firstSequenceDifference(records, out, `capacity ${capacity}`)).toBeNull();
        // Every buffer went back to its pool once its records were read.
        expect(recycled.size).toBe(delivered);
      });
    }
    // Most batches of these streams have a shape: the test must exercise the shaped path, not msgpackr's.
    expect(shapedBatches).toBeGreaterThan(batches / 3);
  });

  test('a shape changed between batches arrives exact: a field added, a type changed, string to number, a nested object', () => {
    const base = Array.from({ length: 50 }, (_, i) => ({ key: i, payload: `p${i}` }));
    const steps: [string, unknown[], boolean][] = [
      ['the first shape', base, true],
      ['a field added', base.map((r) => ({ ...r, extra: true })), true],
      ['int to float', base.map((r) => ({ ...r, key: r.key + 0.5 })), true],
      ['string to number', base.map((r) => ({ ...r, payload: r.key * 2 })), true],
      ['a nested object appears', base.map((r, i) => (i === 25 ? { ...r, payload: { nested: i } } : r)), false],
      // Untried: the batch after one without a shape is skipped.
      ['a field dropped', base.map(({ key }) => ({ key })), false],
      ['the first shape again', base, true],
    ];
    const serializer = new RecordSerializer();
    const deserializer = new RecordDeserializer();
    for (const [what, records, shaped] of steps) {
      for (const record of records) serializer.add(record);
      serializer.stage();
      const buffer = new NetworkBuffer(Buffer.alloc(64 * KiB), { recycle: () => {} });
      expect(serializer.copyTo(buffer)).toBe(true);
      expect(buffer.segment.readUInt32BE(0) >= SHAPED_BATCH, what).toBe(shaped);
      deserializer.setNextBuffer(buffer);
      const out: unknown[] = [];
      for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) out.push(record);
      expect(firstSequenceDifference(records, out, what)).toBeNull();
    }
  });

  test(`records each after its timestamp (an edge of event time) go shaped, timed, shapes changing mid-stream, and come back exact over buffers they span (${seeds} seeds)`, async () => {
    for (let seed = 1; seed <= seeds; seed++) {
      await withSeed(seed, () => {
        const random = seededRandom(5000 + seed);
        const stream = new ShapedStream(random, soup, 0.001 + random() * 0.01);
        // Not -0: a batch of two shapes goes through msgpackr, which gives it back as 0.
        const timestamps = [() => Math.floor(random() * 2 ** 41), () => random() * 1e12 - 5e11, () => -1 - Math.floor(random() * 1000), () => 0];
        const records = Array.from({ length: 500 + Math.floor(random() * 2000) }, () => [timestamps[Math.floor(random() * timestamps.length)](), stream.next()]).flat();
        // Batches of whole pairs, as RecordWriter.emitTimestamped adds them.
        const out = carry(records, Math.round(64 * 1024 ** random()), random, 100, 2);
        expect(firstSequenceDifference(records, out, `seed ${seed}`)).toBeNull();
      });
    }
    const pairs = Array.from({ length: 100 }, (_, i) => [1_700_000_000_000 + i, { key: i, payload: `p${i}` }]).flat();
    expect(writtenShaped(new RecordSerializer(), pairs), 'timestamped records of one shape go shaped').toBe(true);
    const { back, shaped } = oneBatch(pairs);
    expect(shaped).toBe(true);
    expect(back).toEqual(pairs);
  });

  test('a timed batch with a timestamp that is not a number, or an odd count, goes through msgpackr, exact', () => {
    for (const records of [
      [1, { a: 1 }, '2', { a: 2 }],
      [1, { a: 1 }, 2, { a: 2 }, 3],
      [1, { a: 1 }, 2, [1]],
    ]) {
      const { back, shaped } = oneBatch(records);
      expect(shaped, JSON.stringify(records)).toBe(false);
      expect(back).toEqual(records);
    }
  });

  test('a record of another shape within a batch sends the batch through msgpackr, exact', () => {
    const records: unknown[] = [{ a: 1, b: 'x' }, { a: 2, b: 'y' }, { b: 'z', a: 3 }, [1, 2], 'text', { a: 4, b: 'w' }];
    const { back, shaped } = oneBatch(records);
    expect(shaped).toBe(false);
    expect(firstSequenceDifference(records, back, 'mixed')).toBeNull();
  });

  test(`after batches without a shape it skips trying: 1 batch, then twice as many each miss in a row, up to ${SKIP_AFTER_MISS}`, () => {
    const serializer = new RecordSerializer();
    const shaped = [{ n: 1 }, { n: 2 }];
    const shapeless = [{ n: 1 }, 'not an object'];
    expect(writtenShaped(serializer, shaped)).toBe(true);
    let skipped = 1;
    for (let miss = 0; skipped <= SKIP_AFTER_MISS; miss++) {
      expect(writtenShaped(serializer, shapeless), `miss ${miss}`).toBe(false);
      for (let i = 0; i < Math.min(skipped, SKIP_AFTER_MISS); i++) expect(writtenShaped(serializer, shaped), `batch ${i} after miss ${miss}`).toBe(false);
      skipped *= 2;
    }
    // At the cap, and a shaped batch once tried resets it.
    expect(writtenShaped(serializer, shapeless)).toBe(false);
    for (let i = 0; i < SKIP_AFTER_MISS; i++) expect(writtenShaped(serializer, shaped)).toBe(false);
    expect(writtenShaped(serializer, shaped)).toBe(true);
    expect(writtenShaped(serializer, shapeless)).toBe(false);
    expect(writtenShaped(serializer, shaped)).toBe(false);
    expect(writtenShaped(serializer, shaped)).toBe(true);
  });

  test('numbers keep their value: int32 limits, beyond 2^31, large safe integers, NaN, infinities', () => {
    const numbers = [0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, -(2 ** 31) - 1, 2 ** 32, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 53 + 2, NaN, Infinity, -Infinity, 0.1, Number.MIN_VALUE, Number.MAX_VALUE];
    for (const n of numbers) {
      const records = [{ n, s: 'a' }, { n: 5, s: 'b' }];
      const { back, shaped } = oneBatch(records);
      expect(shaped).toBe(true);
      expect(firstSequenceDifference(records, back, `${n}`)).toBeNull();
    }
    const { back, shaped } = oneBatch(numbers.map((n) => [n]));
    expect(shaped).toBe(true);
    expect(firstSequenceDifference(numbers.map((n) => [n]), back, 'one column')).toBeNull();
  });

  test('-0 arrives as 0 in a column of int32s, as msgpackr gives it; a float column keeps it', () => {
    const ints = oneBatch([{ n: -0 }, { n: 1 }]);
    expect(ints.shaped).toBe(true);
    expect(Object.is((ints.back[0] as { n: number }).n, throughMsgpackr(-0))).toBe(true);
    const floats = oneBatch([{ n: -0 }, { n: 1.5 }]);
    expect(Object.is((floats.back[0] as { n: number }).n, -0)).toBe(true);
  });

  test('strings come back as msgpackr gives them: ASCII, any script, long ones, empty, lone surrogates as U+FFFD', () => {
    const strings = ['', 'plain', 'é', '中文', '😀👍🏽', 'e\u0301', '\u0000', 'a\ud800b', '\udc00', 'x\ud83d', 'y'.repeat(5000), 'ж'.repeat(3000), '\u0080\u00ff'];
    for (const s of strings) {
      const records = [{ s, t: 'tail' }, { s: 'ascii', t: s }];
      const { back, shaped } = oneBatch(records);
      expect(shaped).toBe(true);
      expect(back).toEqual(records.map(throughMsgpackr));
    }
  });

  test('booleans, null and key order (integer-like keys first, as objects order them) come back exact', () => {
    const records = [
      { b: true, z: null, 10: 'ten', 2: 'two', ünï: false },
      { b: false, z: null, 10: 'TEN', 2: 'TWO', ünï: true },
    ];
    const { back, shaped } = oneBatch(records);
    expect(shaped).toBe(true);
    expect(back.map((r) => Object.keys(r as object))).toEqual(records.map((r) => Object.keys(r)));
    expect(firstSequenceDifference(records, back, 'keys')).toBeNull();
  });

  test('empty objects and arrays have a shape; records msgpackr treats apart do not', () => {
    expect(oneBatch([{}, {}]).shaped).toBe(true);
    expect(oneBatch([[], []]).shaped).toBe(true);
    const proto = JSON.parse('{"__proto__": 1, "a": 2}') as object;
    const { back, shaped } = oneBatch([proto]);
    expect(shaped).toBe(false);
    expect(back).toEqual([throughMsgpackr(proto)]);
    class Point {
      constructor(readonly x: number) {}
    }
    expect(oneBatch([new Point(1)]).shaped).toBe(false);
    // Plain is what msgpackr calls plain (the constructor is Object): a field named constructor, an inherited key.
    const named = { constructor: 'c', a: 1 };
    expect(oneBatch([named]).shaped).toBe(false);
    expect(oneBatch([named]).back).toEqual([throughMsgpackr(named)]);
    const inheriting = Object.assign(Object.create({ inherited: 1 }) as object, { a: 1 });
    expect(oneBatch([inheriting, { a: 2 }]).back).toEqual([inheriting, { a: 2 }].map(throughMsgpackr));
    expect(oneBatch([Object.assign(Object.create(null) as object, { a: 1 })]).shaped).toBe(false);
    expect(oneBatch([{ a: 1n }]).shaped).toBe(false);
    expect(oneBatch([{ a: undefined }]).shaped).toBe(false);
    // A hole reads as undefined.
    expect(oneBatch([Object.assign(new Array<number>(3), { 0: 1, 2: 3 })]).shaped).toBe(false);
  });

  test('records built from a shaped batch share one hidden class per shape: they are plain objects with literal keys', () => {
    const { back } = oneBatch([{ key: 1, payload: 'a' }, { key: 2, payload: 'b' }]);
    for (const record of back) expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
  });

  test('a shaped batch whose strings run past its end is refused with SPW_ERR_CORRUPT_FRAME', () => {
    const serializer = new RecordSerializer();
    serializer.add({ s: 'abc' });
    serializer.stage();
    const buffer = new NetworkBuffer(Buffer.alloc(256), { recycle: () => {} });
    serializer.copyTo(buffer);
    // The batch ends with the string's 3 bytes; its row says 3: say 200.
    buffer.segment.writeUInt32LE(200, buffer.size - 3 - 4);
    const deserializer = new RecordDeserializer();
    deserializer.setNextBuffer(buffer);
    expect(() => deserializer.next()).toThrow(expect.objectContaining({ code: 'SPW_ERR_CORRUPT_FRAME' }));
  });
});

describe('a stream of shaped and msgpackr batches', () => {
  test('interleaved batches of both kinds, over small buffers, arrive exact and in order', () => {
    const random = seededRandom(77);
    const shapedRecords = (n: number): unknown[] => Array.from({ length: n }, (_, i) => ({ key: i, payload: 'p'.repeat(i % 50) }));
    const records: unknown[] = [];
    for (let i = 0; i < 40; i++) records.push(...(i % 3 === 0 ? [new Map([[i, 'm']]), { d: new Date(i) }, `s${i}`] : shapedRecords(20)));
    const back = carry(records, 300, random, 25);
    expect(firstSequenceDifference(records, back, 'mixed stream')).toBeNull();
  });
});

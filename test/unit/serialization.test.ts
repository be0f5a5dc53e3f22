import { Packr } from 'msgpackr';
import { describe, expect, test } from 'vitest';
import { NetworkBuffer, type BufferRecycler } from '../../src/network/buffer/NetworkBuffer.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { NEED_MORE, RecordDeserializer } from '../../src/network/taskThread/serialization/RecordDeserializer.js';
import { LENGTH_BYTES, RecordSerializer } from '../../src/network/taskThread/serialization/RecordSerializer.js';
import { KiB, MiB, seedCount, withSeed } from '../helpers/plane.js';
import { RecordGenerator, Soup, firstDifference, firstSequenceDifference, type Random } from '../helpers/records.js';

const POISON = 0xee;

/**
 * Stands in for a buffer pool: segments of one size, reused once recycled and
 * overwritten on the way back, so that a record that still pointed into a recycled
 * segment would show it. Throws on a double recycle (NetworkBuffer does).
 */
class SegmentRecycler implements BufferRecycler {
  private readonly free: Buffer[] = [];
  out = 0;

  constructor(readonly capacity: number) {}

  request(): NetworkBuffer {
    this.out++;
    return new NetworkBuffer(this.free.pop() ?? Buffer.alloc(this.capacity), this);
  }

  recycle(segment: Buffer): void {
    this.out--;
    segment.fill(POISON);
    this.free.push(segment);
  }
}

/**
 * Serializes records into buffers of one capacity and deserializes each buffer as it
 * is handed over: full buffers always, partly filled ones when `flushChance` says so
 * (as a buffer timeout would). Checks that every buffer is recycled by the time the
 * deserializer asks for more.
 */
function roundTrip(records: readonly unknown[], capacity: number, random: Random = () => 1, flushChance = 0, maxBatch = 1): unknown[] {
  const segments = new SegmentRecycler(capacity);
  const serializer = new RecordSerializer();
  const deserializer = new RecordDeserializer();
  const out: unknown[] = [];
  let unrecycled = 0;
  const deliver = (buffer: NetworkBuffer): void => {
    deserializer.setNextBuffer(buffer);
    for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) out.push(record);
    if (!buffer.isRecycled) unrecycled++;
  };
  let buffer = segments.request();
  for (let i = 0; i < records.length; ) {
    // A batch of 1 to maxBatch records, the last one possibly shorter.
    const end = Math.min(records.length, i + 1 + Math.floor(random() * maxBatch));
    while (i < end) serializer.add(records[i++]);
    serializer.stage();
    while (!serializer.copyTo(buffer)) {
      deliver(buffer);
      buffer = segments.request();
    }
    if (buffer.size === buffer.capacity || random() < flushChance) {
      deliver(buffer);
      buffer = segments.request();
    }
  }
  if (buffer.size > 0) deliver(buffer);
  else buffer.recycle();
  expect(unrecycled, 'buffers not recycled once read').toBe(0);
  expect(deserializer.hasPartialRecord).toBe(false);
  expect(segments.out, 'buffers not recycled').toBe(0);
  return out;
}

/** Bytes that record takes on the wire, length prefix included. */
function framedLength(record: unknown): number {
  const buffer = new NetworkBuffer(Buffer.alloc(16 * MiB), { recycle: () => {} });
  const serializer = new RecordSerializer();
  serializer.serialize(record);
  expect(serializer.copyTo(buffer)).toBe(true);
  return buffer.size;
}

/** A segment size between 4 KiB and 1 MiB, uniform on a log scale. */
function randomSegmentSize(random: Random): number {
  return Math.round(4 * KiB * 256 ** random());
}

const soup = new Soup(2 * MiB + 1, 4 * MiB + 1);

describe('RecordSerializer and RecordDeserializer', () => {
  const recordSeeds = seedCount(30);
  test(`random records of 0 B to 4x the buffer size come back identical and in order (${recordSeeds} seeds)`, async () => {
    for (let seed = 1; seed <= recordSeeds; seed++) {
      await withSeed(seed, () => {
        const random = seededRandom(seed);
        const capacity = randomSegmentSize(random);
        const generator = new RecordGenerator(random, soup, 4 * capacity);
        const records = Array.from({ length: 50 + Math.floor(random() * 200) }, () => generator.next());
        const difference = firstSequenceDifference(records, roundTrip(records, capacity, random, 0.2), `capacity ${capacity}`);
        expect(difference).toBeNull();
      });
    }
  });

  const batchSeeds = seedCount(15);
  test(`batches of 1 to 300 random records, spanning buffers of 4 KiB to 1 MiB, come back identical and in order (${batchSeeds} seeds)`, async () => {
    for (let seed = 1; seed <= batchSeeds; seed++) {
      await withSeed(seed, () => {
        const random = seededRandom(1000 + seed);
        const capacity = randomSegmentSize(random);
        const generator = new RecordGenerator(random, soup, capacity);
        const records = Array.from({ length: 200 + Math.floor(random() * 2000) }, () => generator.next());
        const difference = firstSequenceDifference(records, roundTrip(records, capacity, random, 0.1, 300), `capacity ${capacity}`);
        expect(difference).toBeNull();
      });
    }
  });

  test('add() estimates a batch from the bytes per record of the last one; stage() empties it', () => {
    const serializer = new RecordSerializer();
    const record = { id: 1, text: 'x'.repeat(90) };
    for (let i = 0; i < 10; i++) serializer.add(record);
    serializer.stage();
    expect(serializer.hasPending).toBe(false);
    const perRecord = serializer.recordBytes;
    expect(perRecord).toBeGreaterThanOrEqual(90);
    expect(perRecord).toBeLessThan(110);
    expect(serializer.add(record)).toBe(perRecord);
    expect(serializer.add(record)).toBe(2 * perRecord);
  });

  test('a corrupt stream (a batch that is not an array) fails clearly', () => {
    const packed = new Packr().pack({ not: 'a batch' });
    const segment = Buffer.alloc(64);
    segment.writeUInt32BE(packed.length, 0);
    packed.copy(segment, LENGTH_BYTES);
    const buffer = new NetworkBuffer(segment, { recycle: () => {} });
    buffer.size = LENGTH_BYTES + packed.length;
    const deserializer = new RecordDeserializer();
    deserializer.setNextBuffer(buffer);
    expect(() => deserializer.next()).toThrow(expect.objectContaining({ code: 'SPW_ERR_CORRUPT_FRAME' }));
  });

  test.each([
    ['msgpackr', 0x7fff_fff0, '2147483632'],
    ['shaped', 0xffff_fff0, '2147483632'],
  ])('a corrupt length of a %s batch (over the largest batch) fails before anything is allocated for it', (_, word, bytes) => {
    const segment = Buffer.alloc(64);
    segment.writeUInt32BE(word, 0);
    const buffer = new NetworkBuffer(segment, { recycle: () => {} });
    buffer.size = 64;
    const deserializer = new RecordDeserializer();
    deserializer.setNextBuffer(buffer);
    expect(() => deserializer.next()).toThrow(expect.objectContaining({ code: 'SPW_ERR_CORRUPT_FRAME', message: expect.stringContaining(bytes) }));
  });

  test('thousands of object shapes in one stream, more than msgpackr has structure ids for', () => {
    const random = seededRandom(11);
    const generator = new RecordGenerator(random, soup, 256);
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'];
    const records: unknown[] = [];
    for (let i = 0; i < 30_000; i++) {
      // Shapes named by the bits of i: 4096 distinct key sets, each seen several times, between other records.
      const record: Record<string, unknown> = {};
      keys.forEach((key, bit) => {
        if ((i >> bit) & 1) record[key] = i;
      });
      records.push(record, generator.next());
    }
    expect(firstSequenceDifference(records, roundTrip(records, 32 * KiB), 'shapes')).toBeNull();
  });

  test('a length prefix split across two buffers at each of its byte offsets', () => {
    const capacity = 4 * KiB;
    for (let left = 0; left <= LENGTH_BYTES; left++) {
      // A batch of one record is a 1-byte array header, then the record: a string of
      // n >= 256 ASCII characters packs as str16, 3 header bytes, then n bytes.
      const first = 'x'.repeat(capacity - left - LENGTH_BYTES - 1 - 3);
      expect(framedLength(first), `first record leaves ${left} bytes`).toBe(capacity - left);
      const records = [first, { after: 'split', left }, 'tail'];
      expect(firstSequenceDifference(records, roundTrip(records, capacity), `${left} bytes left`)).toBeNull();
    }
  });

  test('buffers of 1 to 12 bytes: every record and every length prefix split at every offset', () => {
    const random = seededRandom(7);
    const generator = new RecordGenerator(random, soup, 64);
    const records = Array.from({ length: 300 }, () => generator.next());
    for (let capacity = 1; capacity <= 12; capacity++) {
      expect(firstSequenceDifference(records, roundTrip(records, capacity), `capacity ${capacity}`)).toBeNull();
    }
  });

  test('a record spanning many buffers, the middle ones holding nothing but its bytes', () => {
    const big = { blob: soup.binary(seededRandom(3), 40 * KiB), text: 'é'.repeat(30_000) };
    const records = [1, big, 2, big, 3];
    expect(firstSequenceDifference(records, roundTrip(records, 4 * KiB), 'spanning')).toBeNull();
  });

  test('binary values stay intact after their buffer was recycled and reused', () => {
    const segments = new SegmentRecycler(4 * KiB);
    const serializer = new RecordSerializer();
    const deserializer = new RecordDeserializer();
    const bytes = Buffer.from([1, 2, 3, 4, 5]);
    const buffer = segments.request();
    serializer.serialize({ bytes });
    serializer.copyTo(buffer);
    deserializer.setNextBuffer(buffer);
    const record = deserializer.next() as { bytes: Uint8Array };
    expect(deserializer.next()).toBe(NEED_MORE);
    expect(buffer.isRecycled).toBe(true);
    segments.request(); // the same segment again, overwritten
    expect(firstDifference({ bytes }, record)).toBeNull();
  });

  test('-0 arrives as 0: msgpackr encodes it as the integer 0 (a documented loss)', () => {
    const [out] = roundTrip([-0], 4 * KiB) as [number];
    expect(Object.is(out, 0)).toBe(true);
  });

  test('bigint: 64-bit values round trip as bigint, wider ones are refused when serialized', () => {
    const records = [2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n - 1n];
    expect(roundTrip(records, 4 * KiB)).toEqual(records);
    expect(() => new RecordSerializer().serialize(2n ** 64n)).toThrow(expect.objectContaining({ code: 'SPW_ERR_UNSERIALIZABLE_RECORD' }));
  });

  test('a record msgpack does not carry (a symbol, a cycle, a wide bigint) fails with SPW_ERR_UNSERIALIZABLE_RECORD, and the serializer packs the next one', () => {
    const cycle: { self?: unknown } = {};
    cycle.self = cycle;
    const serializer = new RecordSerializer();
    for (const record of [Symbol('s'), { s: Symbol('s') }, cycle, [2n ** 64n]]) {
      expect(() => serializer.serialize(record)).toThrow(expect.objectContaining({ code: 'SPW_ERR_UNSERIALIZABLE_RECORD' }));
      expect(serializer.hasPending).toBe(false);
    }
    serializer.serialize('after');
    expect(serializer.hasPending).toBe(false);
  });

  test('a staged record survives another serializer packing, once detached', () => {
    const first = new RecordSerializer();
    const second = new RecordSerializer();
    const segments = new SegmentRecycler(4 * KiB);
    first.serialize({ mine: 'first record', n: 1 });
    first.detach();
    second.serialize({ theirs: 'another record that overwrites msgpackr buffer', n: 2 });
    const buffer = segments.request();
    expect(first.copyTo(buffer)).toBe(true);
    const deserializer = new RecordDeserializer();
    deserializer.setNextBuffer(buffer);
    expect(deserializer.next()).toEqual({ mine: 'first record', n: 1 });
  });

  test('hasPartialRecord while a record waits for its next buffer; clear() recycles the buffer held', () => {
    const segments = new SegmentRecycler(4 * KiB);
    const serializer = new RecordSerializer();
    const deserializer = new RecordDeserializer();
    serializer.serialize('y'.repeat(6 * KiB));
    const first = segments.request();
    expect(serializer.copyTo(first)).toBe(false);
    deserializer.setNextBuffer(first);
    expect(deserializer.next()).toBe(NEED_MORE);
    expect(deserializer.hasPartialRecord).toBe(true);
    const second = segments.request();
    deserializer.setNextBuffer(second);
    deserializer.clear();
    expect(second.isRecycled).toBe(true);
    expect(deserializer.hasPartialRecord).toBe(false);
    expect(segments.out).toBe(0);
  });
});

describe('a reader restored from its state (an unaligned checkpoint) reads the rest of its stream exactly', () => {
  /** The stream's buffers, as copies: batches of msgpackr records (structures defined once, then referred to) and shaped ones, spanning buffers. */
  function stream(records: readonly unknown[], capacity: number, batch: number): Buffer[] {
    const serializer = new RecordSerializer();
    const buffers: Buffer[] = [];
    const take = (buffer: NetworkBuffer): void => void buffers.push(Buffer.from(buffer.bytes()));
    let buffer = new NetworkBuffer(Buffer.alloc(capacity), { recycle: () => undefined });
    for (let i = 0; i < records.length; ) {
      const end = Math.min(records.length, i + batch);
      while (i < end) serializer.add(records[i++]);
      serializer.stage();
      while (!serializer.copyTo(buffer)) {
        take(buffer);
        buffer = new NetworkBuffer(Buffer.alloc(capacity), { recycle: () => undefined });
      }
    }
    if (buffer.size > 0) take(buffer);
    return buffers;
  }

  function read(reader: RecordDeserializer, buffers: readonly Buffer[], out: unknown[]): void {
    for (const bytes of buffers) {
      const buffer = new NetworkBuffer(Buffer.from(bytes), { recycle: () => undefined });
      buffer.size = bytes.length;
      reader.setNextBuffer(buffer);
      for (let record = reader.next(); record !== NEED_MORE; record = reader.next()) out.push(record);
    }
  }

  test('cut at every buffer boundary, for mixed and shaped records', () => {
    const random = seededRandom(29);
    const shapes = [(i: number) => ({ key: `k${i}`, payload: 'x'.repeat(i % 50), n: i }), (i: number) => (i % 3 === 0 ? { a: i, nested: { b: [i] } } : [i, `s${i}`])];
    for (const shape of shapes) {
      const records = Array.from({ length: 400 }, (_, i) => shape(i));
      const buffers = stream(records, 256, 1 + Math.floor(random() * 40));
      for (let cut = 0; cut <= buffers.length; cut++) {
        const out: unknown[] = [];
        const first = new RecordDeserializer();
        read(first, buffers.slice(0, cut), out);
        const state = first.state();
        read(RecordDeserializer.restored(JSON.parse(JSON.stringify({ ...state, partial: [...state.partial] }), (k, v) => (k === 'partial' ? Uint8Array.from(v as number[]) : v)) as typeof state), buffers.slice(cut), out);
        expect(firstSequenceDifference(records, out, `cut at buffer ${cut}`)).toBeNull();
      }
    }
  });
});

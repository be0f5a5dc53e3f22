import { Packr, Unpackr } from 'msgpackr';
import { describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { flatSize, packFlat, packedSize } from '../../src/runtime/memory/FlatRecords.js';

/** Numbers at every boundary of msgpack's integer formats, and some that are not 32-bit integers. */
const NUMBERS = [
  0, 1, 0x3f, 0x40, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1,
  -1, -0x20, -0x21, -0x80, -0x81, -0x8000, -0x8001, -(2 ** 31), -(2 ** 31) - 1, 0.5, -2.25, 1e300, NaN, Infinity, -Infinity,
];
/** Strings: ASCII of every header size but the largest (LONG), two- to four-byte UTF-8. */
const STRINGS = ['', 'a', 'x'.repeat(31), 'x'.repeat(32), 'y'.repeat(255), 'y'.repeat(256), 'é', 'é'.repeat(40), '中文', '😀'];
/** As msgpackr packs them, these do not come back as they went in: -0 as 0, a lone surrogate as U+FFFD. */
const NOT_ROUND_TRIPPED = [-0, 'a\ud800b', '\udc00'];
const LONG = 'z'.repeat(70_000);
const OTHERS = [true, false, null];

function packedByMsgpackr(record: unknown): Buffer {
  return new Packr().pack(record);
}

function packedHere(record: unknown): Buffer {
  const size = flatSize(record);
  const target = Buffer.alloc(size + 4, 0xee);
  expect(packFlat(record, target, 2), 'end position').toBe(2 + size);
  return target.subarray(2, 2 + size);
}

describe('flat records', () => {
  test('every scalar is packed byte for byte as msgpackr packs it', () => {
    for (const value of [...NUMBERS, ...STRINGS, LONG, ...NOT_ROUND_TRIPPED, ...OTHERS]) expect(packedHere(value), String(value).slice(0, 20)).toEqual(packedByMsgpackr(value));
  });

  test('random arrays of up to 15 scalars are packed byte for byte as msgpackr packs them, and read back alike', () => {
    const random = seededRandom(13);
    const scalars = [...NUMBERS, ...STRINGS, ...OTHERS];
    const unpackr = new Unpackr();
    for (let i = 0; i < 2000; i++) {
      const record = Array.from({ length: Math.floor(random() * 16) }, () => scalars[Math.floor(random() * scalars.length)]);
      const bytes = packedHere(record);
      expect(bytes).toEqual(packedByMsgpackr(record));
      expect(unpackr.unpack(bytes)).toEqual(record);
    }
  });

  test('a record packed after another was measured is still packed byte for byte (its strings counted again)', () => {
    const record = ['é'.repeat(40), 7, 'x'.repeat(32)];
    const size = flatSize(record);
    flatSize(['a', 'bb', 'ccc']);
    const target = Buffer.alloc(size);
    expect(packFlat(record, target, 0)).toBe(size);
    expect(target).toEqual(packedByMsgpackr(record));
  });

  test('objects, nested or long arrays, undefined and bigints are not flat, and are sized by msgpackr', () => {
    const packr = new Packr();
    for (const record of [{ a: 1 }, [1, [2]], Array.from({ length: 16 }, () => 1), undefined, [undefined], 5n, [1, new Date(0)]]) {
      expect(flatSize(record)).toBe(-1);
      expect(packedSize(record, packr)).toBe(new Packr().pack(record).length);
    }
  });
});

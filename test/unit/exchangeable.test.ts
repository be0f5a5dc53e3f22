import { describe, expect, test } from 'vitest';
import { NetworkBuffer } from '../../src/network/buffer/NetworkBuffer.js';
import { NEED_MORE, RecordDeserializer } from '../../src/network/taskThread/serialization/RecordDeserializer.js';
import { RecordSerializer } from '../../src/network/taskThread/serialization/RecordSerializer.js';
import { ACCEPTED_SHAPES } from '../types/shapes.js';

/** Records through the engine's own serializer and deserializer, in one batch, over 256-byte buffers. */
function crossExchange(records: readonly unknown[]): unknown[] {
  const serializer = new RecordSerializer();
  const deserializer = new RecordDeserializer();
  const out: unknown[] = [];
  for (const record of records) serializer.add(record);
  serializer.stage();
  for (let done = false; !done; ) {
    const buffer = new NetworkBuffer(Buffer.alloc(256), { recycle: () => {} });
    done = serializer.copyTo(buffer);
    deserializer.setNextBuffer(buffer);
    for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) out.push(record);
  }
  return out;
}

/** Buffers arrive where Uint8Arrays were sent: a Buffer is a Uint8Array, so compare them as such. */
function asSent(value: unknown): unknown {
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (Array.isArray(value)) return value.map(asSent);
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [asSent(k), asSent(v)]));
  if (value instanceof Date || value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asSent(v)]));
}

describe('every shape the Exchangeable type accepts crosses an exchange unchanged', () => {
  test.each(Object.entries(ACCEPTED_SHAPES))('%s', (_, value) => {
    // Twice, after another record: the second copy is packed against the structures the first defined.
    const [first, , second] = crossExchange([value, { other: 1 }, value]);
    for (const back of [first, second]) {
      expect(asSent(back)).toStrictEqual(asSent(value));
      if (value instanceof Uint8Array) expect(back).toBeInstanceOf(Uint8Array);
      if (value instanceof Map) expect(back).toBeInstanceOf(Map);
      if (value instanceof Date) expect(back).toBeInstanceOf(Date);
    }
  });

  test('a Uint8Array arrives as a Buffer, which is a Uint8Array with the same bytes', () => {
    const [back] = crossExchange([new Uint8Array([1, 2])]);
    expect(Buffer.isBuffer(back)).toBe(true);
    expect([...(back as Uint8Array)]).toEqual([1, 2]);
  });
});

describe('what the Exchangeable type refuses really is lost or fails in the engine', () => {
  class WithMethod {
    x = 1;
    double(): number {
      return this.x * 2;
    }
  }

  test.each<[string, unknown, unknown]>([
    ['a function field is dropped', { f: () => 1, n: 1 }, { f: undefined, n: 1 }],
    ['a class instance loses its methods', new WithMethod(), { x: 1 }],
    ['a Set arrives as an array', new Set([1, 2]), [1, 2]],
    ['an Error arrives as an array', new Error('boom'), ['Error', 'boom', undefined]],
    ['a RegExp arrives as an array', /a+/g, ['a+', 'g']],
  ])('%s', (_, sent, expected) => {
    const [back] = crossExchange([sent]);
    expect(back).toEqual(expected);
  });

  test('a Uint32Array arrives as its bytes', () => {
    const [back] = crossExchange([new Uint32Array([1])]);
    expect(back).not.toBeInstanceOf(Uint32Array);
    expect([...(back as Uint8Array)]).toEqual([1, 0, 0, 0]);
  });

  test('a symbol cannot be packed', () => {
    expect(() => crossExchange([{ s: Symbol('s') }])).toThrow(expect.objectContaining({ code: 'SPW_ERR_UNSERIALIZABLE_RECORD' }));
  });

  test('not seen by the type, so documented: -0 arrives as 0', () => {
    expect(Object.is(crossExchange([-0])[0], 0)).toBe(true);
  });
});

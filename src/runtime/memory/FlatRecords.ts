/**
 * Packing of flat records, the common shape of keyed records (`[key, value]`, `[id,
 * name, amount]`): a number, string, boolean or null, or an array of up to 15 of them.
 * They are written here straight into a spill block or a sort chunk, byte for byte as
 * msgpackr's default Packr writes them (so a recordUnpackr() reads them alike), without
 * the Buffer that a pack() call makes per record: for records of a few dozen bytes that
 * Buffer, and the copy out of it, cost more than the packing. Anything else (objects,
 * nested arrays, undefined, bigints) is left to msgpackr: flatSize() answers -1.
 */
import type { RecordPacker } from './RecordPacker.js';

/** msgpack's fixarray holds up to 15 elements; longer records are left to msgpackr. */
const MAX_FLAT_LENGTH = 15;
/** msgpackr's default Packr writes positive integers below this as one byte (0x40-0x7f may name a record structure). */
const FIXINT_LIMIT = 0x40;

/**
 * The UTF-8 lengths of the strings of the record flatSize() measured last, in order:
 * callers pack the record they just measured, and packFlat() need not count its
 * strings' bytes a second time.
 */
const measured = { record: undefined as unknown, strings: new Int32Array(MAX_FLAT_LENGTH), count: 0 };

/** The packed size of a flat record, or -1 if it is not flat. */
export function flatSize(record: unknown): number {
  measured.record = record;
  measured.count = 0;
  if (!Array.isArray(record)) return scalarSize(record);
  const n = record.length;
  if (n > MAX_FLAT_LENGTH) return -1;
  let size = 1;
  for (let i = 0; i < n; i++) {
    const s = scalarSize(record[i]);
    if (s < 0) return -1;
    size += s;
  }
  return size;
}

/**
 * Writes a record whose flatSize() is `size` (not -1) at `target[at]`; the caller made
 * room for `size` bytes. Returns the position after it.
 */
export function packFlat(record: unknown, target: Buffer, at: number): number {
  const lengths = record === measured.record ? measured.strings : null;
  if (!Array.isArray(record)) return packScalar(record, lengths, 0, target, at);
  const n = record.length;
  target[at++] = 0x90 | n;
  for (let i = 0, k = 0; i < n; i++) {
    const value: unknown = record[i];
    at = packScalar(value, lengths, k, target, at);
    if (typeof value === 'string') k++;
  }
  return at;
}

function scalarSize(value: unknown): number {
  switch (typeof value) {
    case 'number':
      return numberSize(value);
    case 'string':
      return stringSize(value);
    case 'boolean':
      return 1;
    case 'object':
      return value === null ? 1 : -1;
    default:
      return -1;
  }
}

function numberSize(value: number): number {
  if (value >>> 0 === value) return value < FIXINT_LIMIT ? 1 : value < 0x100 ? 2 : value < 0x10000 ? 3 : 5;
  if (value >> 0 === value) return value >= -0x20 ? 1 : value >= -0x80 ? 2 : value >= -0x8000 ? 3 : 5;
  return 9;
}

function stringSize(value: string): number {
  const bytes = utf8Length(value);
  measured.strings[measured.count++] = bytes;
  return bytes + (bytes < 0x20 ? 1 : bytes < 0x100 ? 2 : bytes < 0x10000 ? 3 : 5);
}

/** UTF-8 bytes of a string as msgpackr writes it: a lone surrogate becomes U+FFFD (3 bytes). */
function utf8Length(value: string): number {
  const n = value.length;
  let bytes = n;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if ((c & 0xfc00) === 0xd800 && i + 1 < n && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2;
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** `lengths[k]`, when given, is the UTF-8 length of `value` if it is a string. */
function packScalar(value: unknown, lengths: Int32Array | null, k: number, target: Buffer, at: number): number {
  if (typeof value === 'number') return packNumber(value, target, at);
  if (typeof value === 'string') return packString(value, lengths === null ? utf8Length(value) : lengths[k], target, at);
  target[at] = value === null ? 0xc0 : value ? 0xc3 : 0xc2;
  return at + 1;
}

function packNumber(value: number, target: Buffer, at: number): number {
  if (value >>> 0 === value) {
    if (value < FIXINT_LIMIT) target[at++] = value;
    else if (value < 0x100) {
      target[at++] = 0xcc;
      target[at++] = value;
    } else if (value < 0x10000) {
      target[at++] = 0xcd;
      target.writeUInt16BE(value, at);
      at += 2;
    } else {
      target[at++] = 0xce;
      target.writeUInt32BE(value, at);
      at += 4;
    }
  } else if (value >> 0 === value) {
    if (value >= -0x20) target[at++] = 0x100 + value;
    else if (value >= -0x80) {
      target[at++] = 0xd0;
      target[at++] = value + 0x100;
    } else if (value >= -0x8000) {
      target[at++] = 0xd1;
      target.writeInt16BE(value, at);
      at += 2;
    } else {
      target[at++] = 0xd2;
      target.writeInt32BE(value, at);
      at += 4;
    }
  } else {
    target[at++] = 0xcb;
    target.writeDoubleBE(value, at);
    at += 8;
  }
  return at;
}

function packString(value: string, bytes: number, target: Buffer, at: number): number {
  if (bytes < 0x20) target[at++] = 0xa0 | bytes;
  else if (bytes < 0x100) {
    target[at++] = 0xd9;
    target[at++] = bytes;
  } else if (bytes < 0x10000) {
    target[at++] = 0xda;
    target.writeUInt16BE(bytes, at);
    at += 2;
  } else {
    target[at++] = 0xdb;
    target.writeUInt32BE(bytes, at);
    at += 4;
  }
  // ASCII, the common case, byte by byte; else Buffer's encoder, which also writes U+FFFD for a lone surrogate.
  if (bytes === value.length) for (let i = 0; i < bytes; i++) target[at + i] = value.charCodeAt(i);
  else target.write(value, at, bytes, 'utf8');
  return at + bytes;
}

/** The packed size of any record: flatSize(), or what `packr` makes of it. */
export function packedSize(record: unknown, packr: RecordPacker): number {
  const size = flatSize(record);
  return size >= 0 ? size : packr.pack(record).length;
}

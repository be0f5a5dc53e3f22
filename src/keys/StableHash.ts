import { SpillwayError } from '../errors/Errors.js';

/**
 * A hash of a key that is the same in every process and on every run: strings by
 * their UTF-16 code units, numbers by value (integers as such, others by their
 * float64 bits), arrays element by element, plain objects by sorted entries.
 * Never identity or randomness, so a key lands on the same channel everywhere.
 *
 * Hashes are int32s: an unsigned one above 2^31 is a heap number in V8, which a hash
 * returned from a function not inlined would allocate per key, and its `%` a float
 * modulus (together 40-80 ns a record on a keyed exchange). Take a bucket with bucketOf.
 */
export function stableHash(key: unknown): number {
  switch (typeof key) {
    case 'string':
      return hashString(key);
    case 'number':
      return hashNumber(key);
    case 'bigint':
      return hashString(`n${key.toString(36)}`);
    case 'boolean':
      return key ? 0x2f3c1e4b : 0x51d2a3c7;
    case 'undefined':
      return 0x7a3b9c1d;
    case 'object':
      return hashObject(key);
    default:
      throw new SpillwayError('SPW_ERR_INVALID_KEY', `cannot hash a key of type ${typeof key}`);
  }
}

/** Spreads the bits of a 32-bit hash (murmur3's finalizer), as Flink does before taking the key group; an int32. */
export function mixHash(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * The bucket of `n` (at most 2^30) a hash falls in, the hash read as unsigned: a key
 * group, a group of words, a spill partition. It is `(hash >>> 0) % n`: a mask for a power
 * of two (the default max parallelism), else taken in halves, since an unsigned 32-bit
 * `%` by a variable is a float modulus in V8 (the x87 `fprem`, 40 ns) where these are
 * integer ones.
 */
export function bucketOf(hash: number, n: number): number {
  if ((n & (n - 1)) === 0) return hash & (n - 1);
  return ((((hash >>> 1) % n) << 1) + (hash & 1)) % n;
}

function hashString(s: string): number {
  // FNV-1a over code units, then mixed: fast, and stable across processes.
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mixHash(h ^ s.length);
}

const float = new Float64Array(1);
const floatWords = new Uint32Array(float.buffer);

function hashNumber(n: number): number {
  if (Number.isInteger(n) && n >= -0x80000000 && n <= 0x7fffffff) return mixHash(n | 0);
  float[0] = n === 0 ? 0 : n; // -0 and 0 are one key
  return mixHash(Math.imul(floatWords[0], 31) ^ floatWords[1]);
}

function hashObject(o: object | null): number {
  if (o === null) return 0x3c6ef372;
  if (o instanceof Uint8Array) {
    let h = 0x811c9dc5;
    for (let i = 0; i < o.length; i++) h = Math.imul(h ^ o[i], 0x01000193);
    return mixHash(h ^ o.length);
  }
  if (Array.isArray(o)) return combine(o.map(stableHash));
  const keys = Object.keys(o).sort();
  const record = o as Record<string, unknown>;
  return combine(keys.flatMap((k) => [hashString(k), stableHash(record[k])]));
}

function combine(hashes: number[]): number {
  let h = 17;
  for (const x of hashes) h = (Math.imul(h, 31) + x) | 0;
  return mixHash(h ^ hashes.length);
}

/**
 * A hash of a key that is the same in every process and on every run: strings by
 * their UTF-16 code units, numbers by value (integers as such, others by their
 * float64 bits), arrays element by element, plain objects by sorted entries.
 * Never identity or randomness, so a key lands on the same channel everywhere.
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
      throw new TypeError(`cannot hash a key of type ${typeof key}`);
  }
}

/** Spreads the bits of a 32-bit hash (murmur3's finalizer), as Flink does before taking the key group. */
export function mixHash(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
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

import { SpillwayError } from '../../../errors/Errors.js';
import { bucketOf, mixHash } from '../../../keys/StableHash.js';
import { forEachWord, isWordCodePoint, lowerWordCodePoint } from '../../Tokenizer.js';

/** Per byte: a separator (an ASCII byte that is not [A-Za-z0-9']), part of an ASCII word, or the start of a multi-byte sequence. */
const SEPARATOR = 0;
const ASCII_WORD = 1;
const MULTI_BYTE = 2;

const BYTE_CLASS = (() => {
  const table = new Uint8Array(256);
  for (let b = 0x30; b <= 0x39; b++) table[b] = ASCII_WORD;
  for (let b = 0x41; b <= 0x5a; b++) table[b] = ASCII_WORD;
  for (let b = 0x61; b <= 0x7a; b++) table[b] = ASCII_WORD;
  table[0x27] = ASCII_WORD;
  for (let b = 0x80; b <= 0xff; b++) table[b] = MULTI_BYTE;
  return table;
})();

/** Each byte as it is hashed and stored: ASCII upper case folded to lower, every other byte as it is. */
const FOLD = (() => {
  const table = new Uint8Array(256);
  for (let b = 0; b < 256; b++) table[b] = b >= 0x41 && b <= 0x5a ? b | 0x20 : b;
  return table;
})();

/** A word and how often it occurs. */
export type WordCountRecord = [word: string, count: number];

/** Counts of the words of one group, packed by WordCounter.groupedCounts. */
export type WordCountGroup = [group: number, packed: Uint8Array];

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;
const INITIAL_SLOTS = 1 << 12;
const INITIAL_ARENA = 1 << 16;
/** A word that does not fit the scratch buffer goes the slow way. */
const SCRATCH_BYTES = 1 << 12;

/**
 * Counts the words of UTF-8 text given as bytes, exactly as `forEachWord` (src/job/Tokenizer.ts)
 * finds them in the decoded text: maximal runs of letters, digits and apostrophes,
 * lower-cased with toLowerCase, invalid bytes decoded as U+FFFD (a separator), as
 * `Buffer#toString('utf8')` and `TextDecoder` do.
 *
 * No string is made per word. Each word's bytes are hashed while they are scanned
 * (FNV-1a over the lower-cased bytes) and looked up in an open-addressing table whose
 * keys are byte ranges of an arena; a string is made once per distinct word, when
 * the counts are read (`forEach`, `entries`). ASCII words are scanned byte by byte;
 * words with other characters are lower-cased code point by code point into a scratch
 * buffer; the rare rest (4-byte characters, invalid bytes, a capital sigma, U+0130)
 * is decoded and given to `forEachWord` itself, one run between ASCII separators at a
 * time, which is exact because an ASCII byte is never part of a multi-byte character.
 *
 * Each chunk given to `add` is tokenized on its own: its ends are word ends (whole
 * lines, for example). A chunk may be any Uint8Array; `add` keeps no reference to it.
 *
 * Counts travel between counters without strings: `groupedCounts` packs them into a
 * fixed number of groups by a hash of the word's bytes (the same group for a word in
 * every counter, so one task can merge a group's counts from all), and `addCounts`
 * adds such a group's counts to another counter, byte range by byte range.
 *
 * Memory: per distinct word its lower-cased UTF-8 bytes in the arena, 20 bytes of
 * place, length, hash and count, and 32 to 64 bytes of table (16-byte slots, kept at most
 * half full; a slot holds what a probe compares, so a count touches the slot's cache
 * line, the word's bytes and its count, not six arrays); arrays double as they grow,
 * so at most about 100 bytes a word plus twice its bytes.
 * Nothing is kept per occurrence. The caller bounds
 * the number of distinct words, or reads and clears the counter when `size` is large.
 */
export class WordCounter {
  /** Per slot SLOT_INTS ints: the word's hash, entry (-1: empty), arena offset and length, so a probe reads one cache line. */
  private slots = emptySlots(INITIAL_SLOTS);
  private mask = INITIAL_SLOTS - 1;
  private offsets = new Int32Array(INITIAL_SLOTS >> 1);
  private lengths = new Int32Array(INITIAL_SLOTS >> 1);
  private hashes = new Int32Array(INITIAL_SLOTS >> 1);
  private counts = new Float64Array(INITIAL_SLOTS >> 1);
  private distinct = 0;
  private arena = Buffer.allocUnsafe(INITIAL_ARENA);
  private arenaUsed = 0;
  private readonly scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  private total = 0;

  /** The number of distinct words counted. */
  get size(): number {
    return this.distinct;
  }

  /**
   * What the counts held take, bytes: each word's bytes, its place, length, hash and
   * count, and its share of the table (at most half full), as a budget counts them.
   */
  get heldBytes(): number {
    return this.arenaUsed + this.distinct * HELD_BYTES_PER_WORD;
  }

  /** The number of words counted, each occurrence once. */
  get words(): number {
    return this.total;
  }

  /** Counts the words of a chunk of UTF-8 text whose ends are word ends. */
  add(chunk: Uint8Array): void {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      let b = chunk[i];
      let kind = BYTE_CLASS[b];
      if (kind === SEPARATOR) {
        i++;
        continue;
      }
      const start = i;
      let hash = FNV_OFFSET;
      while (kind === ASCII_WORD) {
        hash = Math.imul(hash ^ FOLD[b], FNV_PRIME);
        if (++i === n) break;
        b = chunk[i];
        kind = BYTE_CLASS[b];
      }
      if (kind === MULTI_BYTE) i = this.addUnicodeWord(chunk, start, i, hash);
      else this.count(chunk, start, i - start, hash);
    }
  }

  /** Adds `count` to a word given as a string (lower-cased as forEachWord would make it). */
  addWord(word: string, count = 1): void {
    const scratch = word.length * 3 <= SCRATCH_BYTES ? this.scratch : Buffer.allocUnsafe(word.length * 3);
    const length = scratch.write(word, 0, 'utf8');
    this.count(scratch, 0, length, foldedHash(scratch, 0, length), count);
  }

  /**
   * The counts packed into `groups` groups by a hash of each word's bytes, as
   * [group, packed] for each group that has words: per word its byte length (varint),
   * its lower-cased UTF-8 bytes and its count (varint). Makes no string. A `salt`
   * groups the words otherwise (a spill within one group of another grouping).
   */
  groupedCounts(groups: number, salt = 0): WordCountGroup[] {
    const groupOf = new Int32Array(this.distinct);
    const sizes = new Int32Array(groups);
    for (let e = 0; e < this.distinct; e++) {
      const group = bucketOf(mixHash(this.hashes[e] ^ salt), groups);
      groupOf[e] = group;
      sizes[group] += varintSize(this.lengths[e]) + this.lengths[e] + varintSize(this.counts[e]);
    }
    const packed = Array.from(sizes, (size) => (size === 0 ? EMPTY : Buffer.allocUnsafe(size)));
    const at = new Int32Array(groups);
    const arena = this.arena;
    for (let e = 0; e < this.distinct; e++) {
      const group = groupOf[e];
      const out = packed[group];
      const start = this.offsets[e];
      const length = this.lengths[e];
      let i = writeVarint(out, at[group], length);
      // Byte by byte: words are short, and Buffer#copy costs a call into C++ each.
      for (let k = start; k < start + length; k++) out[i++] = arena[k];
      at[group] = writeVarint(out, i, this.counts[e]);
    }
    const result: WordCountGroup[] = [];
    for (let group = 0; group < groups; group++) if (sizes[group] > 0) result.push([group, packed[group]]);
    return result;
  }

  /** Adds counts packed by `groupedCounts` (of this counter or another). */
  addCounts(packed: Uint8Array): void {
    const n = packed.length;
    let i = 0;
    while (i < n) {
      const length = readVarint(packed, i);
      const start = varintEnd;
      if (start + length >= n) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `packed counts end inside a word (at byte ${start} of ${n})`);
      const count = readVarint(packed, start + length);
      i = varintEnd;
      this.count(packed, start, length, foldedHash(packed, start, start + length), count);
    }
  }

  /** Calls fn with each distinct word and its count, in the order the words were first seen; makes each word's string. */
  forEach(fn: (word: string, count: number) => void): void {
    for (let e = 0; e < this.distinct; e++) fn(this.word(e), this.counts[e]);
  }

  /** Each distinct word and its count as a [word, count] pair, one at a time (a consumer that has to wait just stops pulling). */
  *entries(): Generator<[string, number]> {
    for (let e = 0; e < this.distinct; e++) yield [this.word(e), this.counts[e]];
  }

  /** Forgets every word; the memory it has grown to is kept for reuse. */
  clear(): void {
    markEmpty(this.slots);
    this.distinct = 0;
    this.arenaUsed = 0;
    this.total = 0;
  }

  private word(e: number): string {
    const start = this.offsets[e];
    return this.arena.toString('utf8', start, start + this.lengths[e]);
  }

  /**
   * Goes on with a word from `at`, where a multi-byte sequence starts: its characters
   * are decoded and lower-cased into the scratch buffer after the ASCII bytes before
   * them (hash carried on). Returns where the scan goes on.
   */
  private addUnicodeWord(chunk: Uint8Array, start: number, at: number, hash: number): number {
    const n = chunk.length;
    const scratch = this.scratch;
    if (at - start > SCRATCH_BYTES - 4) return this.addByReference(chunk, start);
    let length = 0;
    for (let k = start; k < at; k++) scratch[length++] = FOLD[chunk[k]];
    let i = at;
    while (i < n) {
      const b = chunk[i];
      let cp: number;
      let size: number;
      if (b < 0x80) {
        if (BYTE_CLASS[b] === SEPARATOR) break;
        if (length >= SCRATCH_BYTES - 4) return this.addByReference(chunk, start);
        const folded = FOLD[b];
        scratch[length++] = folded;
        hash = Math.imul(hash ^ folded, FNV_PRIME);
        i++;
        continue;
      } else if (b >= 0xc2 && b <= 0xdf) {
        if (i + 1 >= n || (chunk[i + 1] & 0xc0) !== 0x80) return this.addByReference(chunk, start);
        cp = ((b & 0x1f) << 6) | (chunk[i + 1] & 0x3f);
        size = 2;
      } else if (b >= 0xe0 && b <= 0xef) {
        if (i + 2 >= n) return this.addByReference(chunk, start);
        const b1 = chunk[i + 1];
        const b2 = chunk[i + 2];
        // Overlong forms (E0 below A0) and surrogates (ED from A0) are invalid: U+FFFD.
        if ((b1 & 0xc0) !== 0x80 || (b2 & 0xc0) !== 0x80 || (b === 0xe0 && b1 < 0xa0) || (b === 0xed && b1 >= 0xa0)) {
          return this.addByReference(chunk, start);
        }
        cp = ((b & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (b2 & 0x3f);
        size = 3;
      } else {
        // 4-byte characters (outside the BMP) and invalid bytes are rare: the reference decides.
        return this.addByReference(chunk, start);
      }
      if (!isWordCodePoint(cp)) {
        // A separator outside ASCII ends the word; the scan goes on after it.
        if (length > 0) this.count(scratch, 0, length, hash);
        return i + size;
      }
      const lower = lowerWordCodePoint(cp);
      if (lower < 0 || length >= SCRATCH_BYTES - 4) return this.addByReference(chunk, start);
      if (lower < 0x80) {
        scratch[length++] = lower;
        hash = Math.imul(hash ^ lower, FNV_PRIME);
      } else if (lower < 0x800) {
        const c0 = 0xc0 | (lower >> 6);
        const c1 = 0x80 | (lower & 0x3f);
        scratch[length++] = c0;
        scratch[length++] = c1;
        hash = Math.imul(Math.imul(hash ^ c0, FNV_PRIME) ^ c1, FNV_PRIME);
      } else {
        const c0 = 0xe0 | (lower >> 12);
        const c1 = 0x80 | ((lower >> 6) & 0x3f);
        const c2 = 0x80 | (lower & 0x3f);
        scratch[length++] = c0;
        scratch[length++] = c1;
        scratch[length++] = c2;
        hash = Math.imul(Math.imul(Math.imul(hash ^ c0, FNV_PRIME) ^ c1, FNV_PRIME) ^ c2, FNV_PRIME);
      }
      i += size;
    }
    if (length > 0) this.count(scratch, 0, length, hash);
    return i;
  }

  /**
   * The exact way for what the byte scan does not decide: from `start` (a character
   * boundary, where no word is in progress) to the next ASCII separator, the bytes
   * are decoded and forEachWord finds the words. Returns the end of that run.
   */
  private addByReference(chunk: Uint8Array, start: number): number {
    const n = chunk.length;
    let end = start;
    while (end < n && BYTE_CLASS[chunk[end]] !== SEPARATOR) end++;
    const text = Buffer.from(chunk.buffer, chunk.byteOffset + start, end - start).toString('utf8');
    forEachWord(text, (word) => this.addWord(word));
    return end;
  }

  /** Adds `by` to the word of bytes[start, start + length), lower-cased by FOLD, whose hash is given. */
  private count(bytes: Uint8Array, start: number, length: number, hash: number, by = 1): void {
    this.total += by;
    const slots = this.slots;
    const mask = this.mask;
    let slot = (hash ^ (hash >>> 15)) & mask;
    for (;;) {
      const at = slot * SLOT_INTS;
      const e = slots[at + ENTRY];
      if (e < 0) break;
      if (slots[at] === hash && slots[at + LENGTH] === length && this.equals(slots[at + OFFSET], bytes, start, length)) {
        this.counts[e] += by;
        return;
      }
      slot = (slot + 1) & mask;
    }
    this.insert(slot, bytes, start, length, hash, by);
  }

  private equals(offset: number, bytes: Uint8Array, start: number, length: number): boolean {
    const arena = this.arena;
    for (let k = 0; k < length; k++) if (arena[offset + k] !== FOLD[bytes[start + k]]) return false;
    return true;
  }

  private insert(slot: number, bytes: Uint8Array, start: number, length: number, hash: number, by: number): void {
    const e = this.distinct++;
    if (e === this.offsets.length) this.growEntries();
    if (this.arenaUsed + length > this.arena.length) this.growArena(length);
    const arena = this.arena;
    const offset = this.arenaUsed;
    for (let k = 0; k < length; k++) arena[offset + k] = FOLD[bytes[start + k]];
    this.arenaUsed += length;
    this.offsets[e] = offset;
    this.lengths[e] = length;
    this.hashes[e] = hash;
    this.counts[e] = by;
    fillSlot(this.slots, slot, hash, e, offset, length);
    // At most half full, so probes stay short.
    if (this.distinct * 2 > this.mask + 1) this.rehash((this.mask + 1) * 2);
  }

  private growEntries(): void {
    const size = this.offsets.length * 2;
    const grow = <T extends Int32Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const array = make(size);
      array.set(old);
      return array;
    };
    this.offsets = grow(this.offsets, (n) => new Int32Array(n));
    this.lengths = grow(this.lengths, (n) => new Int32Array(n));
    this.hashes = grow(this.hashes, (n) => new Int32Array(n));
    this.counts = grow(this.counts, (n) => new Float64Array(n));
  }

  private growArena(needed: number): void {
    const arena = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.arenaUsed + needed));
    this.arena.copy(arena, 0, 0, this.arenaUsed);
    this.arena = arena;
  }

  /** Moves every occupied slot, as it is, into a table of `size` slots. */
  private rehash(size: number): void {
    const old = this.slots;
    const slots = emptySlots(size);
    const mask = size - 1;
    for (let from = 0; from < old.length; from += SLOT_INTS) {
      if (old[from + ENTRY] < 0) continue;
      const hash = old[from];
      let slot = (hash ^ (hash >>> 15)) & mask;
      while (slots[slot * SLOT_INTS + ENTRY] >= 0) slot = (slot + 1) & mask;
      const to = slot * SLOT_INTS;
      slots[to] = hash;
      slots[to + ENTRY] = old[from + ENTRY];
      slots[to + OFFSET] = old[from + OFFSET];
      slots[to + LENGTH] = old[from + LENGTH];
    }
    this.slots = slots;
    this.mask = mask;
  }
}

const EMPTY = Buffer.alloc(0);

/** FNV-1a over bytes[start, end), each byte lower-cased by FOLD, as `add` hashes a word while scanning it. */
function foldedHash(bytes: Uint8Array, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ FOLD[bytes[i]], FNV_PRIME);
  return hash;
}

/** Bytes of a non-negative integer (up to 2^53) as a varint: 7 bits a byte, low first. */
function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** Writes a varint at `at`; returns where the next byte goes. Arithmetic, not bit operations: counts may pass 2^32. */
function writeVarint(out: Buffer, at: number, value: number): number {
  while (value >= 128) {
    out[at++] = (value % 128) | 0x80;
    value = Math.floor(value / 128);
  }
  out[at++] = value;
  return at;
}

/** Where the last varint readVarint read ends: a second result without an object per call. */
let varintEnd = 0;

/** The varint at `at` (its end in varintEnd); SPW_ERR_CORRUPT_FRAME if the bytes end inside it. */
function readVarint(bytes: Uint8Array, at: number): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (at >= bytes.length) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `packed counts end inside a number (at byte ${at} of ${bytes.length})`);
    const b = bytes[at++];
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) break;
    scale *= 128;
  }
  varintEnd = at;
  return value;
}

/** Bytes a distinct word takes beside its own: 20 of place, length, hash and count, and two to four 16-byte slots. */
const HELD_BYTES_PER_WORD = 20 + 4 * 16;

/** Ints per slot, and where each field sits in them. */
const SLOT_INTS = 4;
const ENTRY = 1;
const OFFSET = 2;
const LENGTH = 3;

function emptySlots(count: number): Int32Array {
  return markEmpty(new Int32Array(count * SLOT_INTS));
}

function markEmpty(slots: Int32Array): Int32Array {
  for (let at = ENTRY; at < slots.length; at += SLOT_INTS) slots[at] = -1;
  return slots;
}

function fillSlot(slots: Int32Array, slot: number, hash: number, entry: number, offset: number, length: number): void {
  const at = slot * SLOT_INTS;
  slots[at] = hash;
  slots[at + ENTRY] = entry;
  slots[at + OFFSET] = offset;
  slots[at + LENGTH] = length;
}

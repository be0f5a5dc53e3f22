/**
 * What an external sort keeps per held record beside its packed bytes: its key, where
 * its bytes are (chunk index * 2^32 + offset) and their length, in pages of a fixed
 * number of entries. Growing adds a page and never copies: growing JavaScript arrays
 * by copying left the garbage of every smaller copy in the heap (measured: 80-90 MiB of
 * heap in a sort thread of a 38 MiB budget, against 20-40 with pages).
 */
export class HeldEntries {
  /** Bytes of a page's slot: the key (8), the place (8), the length (4). */
  static readonly SLOT_BYTES = 20;
  private readonly shift: number;
  private readonly mask: number;
  private readonly keyPages: unknown[][] = [];
  private readonly placePages: Float64Array[] = [];
  private readonly lengthPages: Uint32Array[] = [];
  /** Entries held. */
  count = 0;

  /** Pages of 2^`shift` entries. */
  constructor(shift: number) {
    this.shift = shift;
    this.mask = (1 << shift) - 1;
  }

  /** The bytes of a page. */
  get pageBytes(): number {
    return (1 << this.shift) * HeldEntries.SLOT_BYTES;
  }

  /** Whether the next push() adds a page. */
  get full(): boolean {
    return (this.count & this.mask) === 0;
  }

  push(key: unknown, place: number, length: number): void {
    const slot = this.count & this.mask;
    if (slot === 0) {
      const size = 1 << this.shift;
      this.keyPages.push(new Array<unknown>(size));
      this.placePages.push(new Float64Array(size));
      this.lengthPages.push(new Uint32Array(size));
    }
    const page = this.count >>> this.shift;
    this.keyPages[page][slot] = key;
    this.placePages[page][slot] = place;
    this.lengthPages[page][slot] = length;
    this.count++;
  }

  placeAt(i: number): number {
    return this.placePages[i >>> this.shift][i & this.mask];
  }

  lengthAt(i: number): number {
    return this.lengthPages[i >>> this.shift][i & this.mask];
  }

  /** The keys in one array, to sort by: numbers in a Float64Array (off the heap), anything else in an Array. */
  numberKeys(): Float64Array {
    const keys = new Float64Array(this.count);
    for (let i = 0; i < this.count; i++) keys[i] = this.keyPages[i >>> this.shift][i & this.mask] as number;
    return keys;
  }

  keys(): unknown[] {
    const keys = new Array<unknown>(this.count);
    for (let i = 0; i < this.count; i++) keys[i] = this.keyPages[i >>> this.shift][i & this.mask];
    return keys;
  }
}

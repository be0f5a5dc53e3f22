/**
 * A single-producer, single-consumer ring of 32-bit integers in shared memory: how
 * handover entries cross between a task thread and the network thread without a
 * message each. The writer publishes whole entries by moving the tail; the reader
 * takes everything up to the tail and moves the head. A reader with nothing to
 * read sleeps in Atomics.waitAsync, and only then does the writer notify it, so
 * two busy threads exchange entries with no wake-up at all. On Node 20 a notify has
 * been seen not to wake a registered waiter (1 in about 20 benchmark runs: a
 * transport stalled for minutes with entries published; a second notify woke it),
 * so every RECHECK_MS a reader with entries waiting wakes itself.
 *
 * Positions count modulo twice the capacity, so that a full ring and an empty one
 * differ and the counters never overflow however long the threads live.
 *
 * | int | written by | meaning |
 * |---|---|---|
 * | 0 TAIL | writer | where the next published int goes |
 * | 1 HEAD | reader | where the next unread int is |
 * | 2 SLEEPING | both | 1 while the reader waits for the tail to move |
 * | 4.. | writer | the ring, `capacity` ints |
 */
const TAIL = 0;
const HEAD = 1;
const SLEEPING = 2;
const HEADER = 4;

/** How often a reader checks that it is not asleep on published entries, should a notify not wake it. */
export const RECHECK_MS = 50;

/** Ints in a ring: 256 KiB, thousands of entries (an entry is a few ints, more with a string operand). */
export const DEFAULT_RING_CAPACITY = 1 << 16;

export function createRing(capacity = DEFAULT_RING_CAPACITY): SharedArrayBuffer {
  return new SharedArrayBuffer((HEADER + capacity) * 4);
}

/** The writing end. Entries that do not fit wait, whole and in order, until the reader makes room. */
export class RingWriter {
  private readonly ints: Int32Array;
  private readonly capacity: number;
  private tail: number;
  private readonly overflow: number[][] = [];
  private retry: NodeJS.Timeout | null = null;

  constructor(memory: SharedArrayBuffer) {
    this.ints = new Int32Array(memory);
    this.capacity = this.ints.length - HEADER;
    this.tail = Atomics.load(this.ints, TAIL);
  }

  /** Appends an entry; the reader sees it after publish(). */
  write(entry: number[]): void {
    if (this.overflow.length > 0 || !this.fits(entry)) this.overflow.push(entry);
    else this.put(entry);
  }

  /** Makes every entry written so far visible, and wakes the reader if it sleeps. */
  publish(): void {
    while (this.overflow.length > 0 && this.fits(this.overflow[0])) this.put(this.overflow.shift()!);
    Atomics.store(this.ints, TAIL, this.tail);
    if (Atomics.load(this.ints, SLEEPING) === 1 && Atomics.compareExchange(this.ints, SLEEPING, 1, 0) === 1) {
      Atomics.notify(this.ints, TAIL);
    }
    if (this.overflow.length > 0 && this.retry === null) {
      // The reader is behind by a whole ring: try again shortly rather than grow the ring.
      this.retry = setTimeout(() => {
        this.retry = null;
        this.publish();
      }, 1);
    }
  }

  /**
   * Drops every entry not yet published: those of a task that has ended, which must
   * not reach the next task the thread serves.
   */
  discard(): void {
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
    this.overflow.length = 0;
    this.tail = Atomics.load(this.ints, TAIL);
  }

  private fits(entry: number[]): boolean {
    const used = (this.tail - Atomics.load(this.ints, HEAD) + 2 * this.capacity) % (2 * this.capacity);
    return this.capacity - used >= entry.length;
  }

  private put(entry: number[]): void {
    for (const value of entry) {
      this.ints[HEADER + (this.tail % this.capacity)] = value;
      this.tail = (this.tail + 1) % (2 * this.capacity);
    }
  }
}

/** The reading end: hands each batch of published ints to `onInts`, in order. */
export class RingReader {
  private readonly ints: Int32Array;
  private readonly capacity: number;
  private head: number;
  private stopped = false;

  constructor(
    memory: SharedArrayBuffer,
    private readonly onInts: (ints: number[]) => void,
  ) {
    this.ints = new Int32Array(memory);
    this.capacity = this.ints.length - HEADER;
    this.head = Atomics.load(this.ints, HEAD);
  }

  /** Reads in the background until stop(): sleeps while the ring is empty. */
  async start(): Promise<void> {
    // A timer, not a timeout on each wait: that would cost a timer per sleep, thousands a second.
    const recheck = setInterval(() => this.wakeIfBehind(), RECHECK_MS).unref();
    try {
      while (!this.stopped) {
        this.drain();
        Atomics.store(this.ints, SLEEPING, 1);
        const tail = Atomics.load(this.ints, TAIL);
        if (tail !== this.head) {
          Atomics.store(this.ints, SLEEPING, 0);
          continue;
        }
        const wait = Atomics.waitAsync(this.ints, TAIL, tail);
        if (wait.async) await wait.value;
      }
    } finally {
      clearInterval(recheck);
    }
  }

  /** Runs only while the loop above awaits: entries published meanwhile mean a notify went astray. */
  private wakeIfBehind(): void {
    if (Atomics.load(this.ints, TAIL) !== this.head) Atomics.notify(this.ints, TAIL);
  }

  /**
   * Hands over everything published so far. Called before a control message is
   * handled too, since the writer published what preceded it.
   */
  drain(): void {
    const tail = Atomics.load(this.ints, TAIL);
    if (tail === this.head || this.stopped) return;
    const out = new Array<number>((tail - this.head + 2 * this.capacity) % (2 * this.capacity));
    for (let i = 0; i < out.length; i++) {
      out[i] = this.ints[HEADER + (this.head % this.capacity)];
      this.head = (this.head + 1) % (2 * this.capacity);
    }
    Atomics.store(this.ints, HEAD, this.head);
    this.onInts(out);
  }

  stop(): void {
    this.stopped = true;
    Atomics.notify(this.ints, TAIL);
  }
}

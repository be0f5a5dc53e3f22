/** A FIFO queue over an array with a moving head: O(1) push and shift without per-item allocation. */
export class BufferQueue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** Puts an item at the front, ahead of the others (a priority event). */
  unshift(item: T): void {
    if (this.head > 0) this.items[--this.head] = item;
    else this.items.unshift(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** What is queued, oldest first, left in place. */
  *values(): Generator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i] as T;
  }

  /** Removes and returns everything, oldest first. */
  drain(): T[] {
    const rest = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return rest;
  }
}

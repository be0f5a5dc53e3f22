/** A binary min-heap by a number each item has (its time): push and pop in O(log n). */
export class MinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly priority: (item: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  /** The least item, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    const p = this.priority(item);
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.priority(items[parent]) <= p) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = item;
  }

  /** Takes the least item, or undefined when empty. */
  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    const p = this.priority(last);
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && this.priority(items[right]) < this.priority(items[left]) ? right : left;
      if (this.priority(items[child]) >= p) break;
      items[i] = items[child];
      i = child;
    }
    items[i] = last;
    return top;
  }

  /** Every item, in no order. */
  values(): readonly T[] {
    return this.items;
  }
}

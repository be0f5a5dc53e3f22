/**
 * How long a TaskManager remembers a job after it heard of it last: long enough for
 * a deployment or a partition location that crossed the job's end to arrive, short
 * enough that weeks of jobs leave nothing behind.
 */
export const JOB_MEMORY_MS = 10 * 60_000;

/** Keys with the time they were last set, oldest first; entries older than the TTL are dropped as new ones come and on reads. */
class Expiry<K> {
  private readonly times = new Map<K, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly drop: (key: K) => void,
  ) {}

  touch(key: K): void {
    this.times.delete(key);
    this.times.set(key, Date.now());
    this.prune();
  }

  forget(key: K): void {
    this.times.delete(key);
  }

  prune(): void {
    const oldest = Date.now() - this.ttlMs;
    for (const [key, time] of this.times) {
      if (time >= oldest) return;
      this.times.delete(key);
      this.drop(key);
    }
  }
}

/** A Set whose members go after `ttlMs`: for per-job marks that must not outlive the job by much. */
export class ExpiringSet<K> {
  private readonly members = new Set<K>();
  private readonly expiry: Expiry<K>;

  constructor(ttlMs: number) {
    this.expiry = new Expiry(ttlMs, (key) => this.members.delete(key));
  }

  add(key: K): this {
    this.members.add(key);
    this.expiry.touch(key);
    return this;
  }

  has(key: K): boolean {
    this.expiry.prune();
    return this.members.has(key);
  }

  get size(): number {
    this.expiry.prune();
    return this.members.size;
  }
}

/** A Map whose entries go `ttlMs` after they were last set: for per-task data whose task may never come. */
export class ExpiringMap<K, V> {
  private readonly entries = new Map<K, V>();
  private readonly expiry: Expiry<K>;

  constructor(ttlMs: number) {
    this.expiry = new Expiry(ttlMs, (key) => this.entries.delete(key));
  }

  set(key: K, value: V): this {
    this.entries.set(key, value);
    this.expiry.touch(key);
    return this;
  }

  get(key: K): V | undefined {
    this.expiry.prune();
    return this.entries.get(key);
  }

  delete(key: K): boolean {
    this.expiry.forget(key);
    return this.entries.delete(key);
  }

  get size(): number {
    this.expiry.prune();
    return this.entries.size;
  }
}

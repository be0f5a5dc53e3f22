import crypto from 'node:crypto';
import type { JobLoader } from '../../job/JobLoader.js';
import type { JobStore } from '../store/JobStore.js';

/**
 * Uploaded job modules, kept in the store by content hash. One that no kept job runs
 * is dropped `ttlMs` after its last upload or use, with the JobManager's imported copy;
 * TaskManagers learn the hashes still kept from their heartbeat answers and drop
 * their copies of the others. A restart counts as a use: the times live in the heap.
 */
export class Modules {
  /** Every kept module's last upload or use. */
  private readonly touched = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly store: JobStore,
    private readonly loader: JobLoader,
    private readonly ttlMs: number,
    private readonly inUse: () => Set<string>,
  ) {
    const now = Date.now();
    for (const [hash] of store.moduleTimes()) this.touched.set(hash, now);
    // Often enough that a module goes within a quarter of its TTL late, at most once a minute.
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(60_000, ttlMs / 4)));
    this.sweeper.unref();
  }

  /** Stores a module's source (committed before this returns, so it can be submitted at once); returns its hash. */
  async upload(source: string): Promise<string> {
    const hash = crypto.createHash('sha256').update(source).digest('hex');
    const now = Date.now();
    await this.store.putModule(hash, { source, touched: now });
    this.touched.set(hash, now);
    return hash;
  }

  has(hash: string): boolean {
    return this.touched.has(hash);
  }

  source(hash: string): string | undefined {
    return this.has(hash) ? this.store.getModule(hash)?.source : undefined;
  }

  /** A job was submitted with it, or one that ran it ended. */
  touch(hash: string): void {
    if (this.touched.has(hash)) this.touched.set(hash, Date.now());
  }

  /** The hashes kept, for TaskManagers to keep their copies of. */
  hashes(): string[] {
    return [...this.touched.keys()];
  }

  /** Drops the modules no kept job runs whose TTL has passed. */
  sweep(now = Date.now()): void {
    const used = this.inUse();
    for (const [hash, touched] of this.touched) {
      if (used.has(hash) || now - touched < this.ttlMs) continue;
      this.touched.delete(hash);
      this.loader.forget(hash);
      void this.store.removeModule(hash);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

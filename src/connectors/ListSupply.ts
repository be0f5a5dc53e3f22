import type { SplitSupply } from './SplitAssigner.js';

/**
 * Hands out a list of splits fixed when it is made, one an ask, in order (a Redis
 * stream, a PostgreSQL range). Its snapshot is what it has not handed out yet (JSON), so a
 * restore goes on with the same splits, whatever the service holds by then: a bounded
 * Redis source keeps the last ids it fixed at its start.
 */
export class ListSupply<S> implements SplitSupply<S> {
  private splits: S[];

  constructor(splits: readonly S[]) {
    this.splits = [...splits];
  }

  take(): S[] {
    const next = this.splits.shift();
    return next === undefined ? [] : [next];
  }

  snapshot(): S[] {
    return [...this.splits];
  }

  restore(state: unknown): void {
    this.splits = [...(state as S[])];
  }
}

import { SpillwayError } from '../../errors/Errors.js';
import { HEAP_OBJECT_FACTOR } from '../memory/ManagedMemory.js';

/**
 * What one operator's state holds in the task's heap (keyed state, windows, timers),
 * estimated as it changes, against the operator's share of managed memory: past it the
 * task fails with SPW_ERR_STATE_TOO_LARGE, naming the setting (state does not spill).
 */
export class StateBudget {
  /** Estimated bytes held. */
  bytes = 0;

  constructor(
    /** The operator, for the error: its kind and place. */
    readonly owner: string,
    /** Bytes it may hold; Infinity outside a TaskManager. */
    readonly limit: number,
  ) {}

  count(delta: number): void {
    this.bytes += delta;
    if (delta > 0 && this.bytes * HEAP_OBJECT_FACTOR > this.limit) {
      throw new SpillwayError(
        'SPW_ERR_STATE_TOO_LARGE',
        `the state of ${this.owner} holds about ${mb(this.bytes * HEAP_OBJECT_FACTOR)}, past its share of managed memory (${mb(this.limit)}): give the TaskManagers more --managed-memory, or the job more parallelism`,
      );
    }
  }
}

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

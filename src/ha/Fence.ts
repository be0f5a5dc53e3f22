import { performance } from 'node:perf_hooks';
import { SpillwayError } from '../errors/Errors.js';

/**
 * This JobManager's leadership as it acts on it: its fencing epoch and the moment, on
 * this process's monotonic clock, at which its lease ends unless renewed. Checked before
 * every act of a leader (a deployment, a checkpoint's trigger or completion, a commit):
 * past the deadline it is no leader, without being told and whatever the wall clock
 * did. Epoch 0 is the one JobManager of a cluster without HA, which leads for ever.
 */
export class Fence {
  private deadline = -Infinity;
  private current = 0;

  /** A fence that always leads, at epoch 0: a JobManager without HA. */
  static always(): Fence {
    const fence = new Fence();
    fence.deadline = Infinity;
    return fence;
  }

  /** The epoch of the leadership held, or of the last one held. */
  get epoch(): number {
    return this.current;
  }

  /** Whether this JobManager leads now, on its own clock. */
  get leads(): boolean {
    return performance.now() < this.deadline;
  }

  /** Leadership at `epoch` until `deadline` (performance.now() ms). */
  hold(epoch: number, deadline: number): void {
    this.current = epoch;
    this.deadline = deadline;
  }

  /** Leadership ends now. */
  drop(): void {
    this.deadline = -Infinity;
  }

  /** Throws SPW_ERR_FENCED unless this JobManager leads now: what follows is an act of a leader. */
  check(what: string): void {
    if (!this.leads) throw new SpillwayError('SPW_ERR_FENCED', `${what}: this JobManager no longer leads (epoch ${this.current}); it does nothing a leader does`);
  }
}

import { SpillwayError } from '../errors/Errors.js';

/**
 * The transitions of one state enum, written once beside it. `check` refuses a
 * transition the table does not list with SPW_ERR_ILLEGAL_STATE_TRANSITION: a bug,
 * caught where it is made rather than shown later as a job that never ends.
 */
export class StateMachine<S extends string> {
  constructor(
    /** What the states are of, for the error: "job", "task". */
    private readonly of: string,
    private readonly next: Readonly<Record<S, readonly S[]>>,
  ) {}

  /** Whether `from` may go to `to`. */
  allows(from: S, to: S): boolean {
    return this.next[from].includes(to);
  }

  /** Whether nothing follows `state`. */
  isTerminal(state: S): boolean {
    return this.next[state].length === 0;
  }

  /** Returns `to` if `from` may go there; throws otherwise. */
  check(from: S, to: S, what: string): S {
    if (!this.allows(from, to)) throw new SpillwayError('SPW_ERR_ILLEGAL_STATE_TRANSITION', `${this.of} ${what} cannot go from ${from} to ${to}`);
    return to;
  }
}

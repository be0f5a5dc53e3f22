import { flatMapping } from '../Chain.js';
import type { OperatorSpec } from './OperatorSpec.js';

/** State per task, fed every record; its records come out on the way or at the end of the input (Flink's mapPartition). */
/**
 * An operator with state per task: `create` makes it when the task starts, `add`
 * feeds it each record, and `emit` turns it into the task's last records once the
 * input has ended (Flink's mapPartition). Both `add` and `emit` may pass records to
 * their `emit` (add, to bound the state: give out what it holds and forget it) or
 * return them: an array, or an iterable such as a generator, which is pulled only as
 * fast as the next step takes them, the way to emit much without holding it twice.
 * Records emitted while the next step waits are held until it may go on.
 * Written with methods, so that an `Accumulate<State>` is an `Accumulate`.
 */
export interface Accumulate<A = unknown> {
  /** Makes the task's state; called once, before the first record. */
  create(): A;
  /** Adds one record to the state; may emit records or return them. */
  add(state: A, record: unknown, emit: (record: unknown) => void): Iterable<unknown> | void;
  /** Called once, after the last record: emits the state's records or returns them. */
  emit(state: A, emit: (record: unknown) => void): Iterable<unknown> | void;
}

export type AccumulateDefinition = { kind: 'accumulate'; accumulate: Accumulate };

/**
 * `{ kind: 'accumulate', accumulate: { create, add, emit } }`: state per task fed every
 * record; its records go on as a flatMap's do, at the end waiting where the next step
 * has to, then the end.
 */
export const ACCUMULATE: OperatorSpec<AccumulateDefinition> = {
  kind: 'accumulate',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => {
    const spec = op.accumulate as Partial<AccumulateDefinition['accumulate']> | undefined;
    const missing = (['create', 'add', 'emit'] as const).filter((f) => typeof spec?.[f] !== 'function');
    return missing.length === 0 ? undefined : `needs the function${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`;
  },
  compile: ({ accumulate: spec }, { push: next, end: endNext }) => {
    const state = spec.create();
    return {
      push: flatMapping((r, emit) => spec.add(state, r, emit), next),
      end: async () => {
        const waiting = flatMapping((s, emit) => spec.emit(s, emit), next)(state);
        if (waiting) await waiting;
        await endNext();
      },
    };
  },
};

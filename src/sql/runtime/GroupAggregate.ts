/**
 * An unwindowed GROUP BY in streaming mode (Flink's GroupAggFunction): one accumulator per
 * key in keyed state; each input change updates it and gives out the change of the key's
 * result row, `+I` the first time, `-U`/`+U` after, `-D` when every row of the key was
 * retracted. In batch mode the key's row is given once, when the input ends.
 */
import type { ProcessFunction } from '../../runtime/operators/ProcessFunction.js';
import type { Accumulator } from '../planner/Aggregates.js';
import type { Change, Row } from '../planner/Connectors.js';

/** Where the end of a bounded input fires a batch aggregate's timer. */
export const END_OF_INPUT = Number.MAX_SAFE_INTEGER;

export function groupAggregate(
  acc: Accumulator,
  /** The key's values as the result row starts with them. */
  keyValues: (key: unknown) => unknown[],
  options: { updatingInput: boolean; batch: boolean },
): ProcessFunction<unknown, unknown> {
  const resultRow = (key: unknown, state: unknown[]): Row => [...keyValues(key), ...acc.result(state)] as Row;
  return {
    processElement(record, ctx, emit) {
      const value = ctx.state.value<unknown[]>('acc');
      let state = value.get();
      const first = state === undefined;
      if (first) {
        state = acc.create();
        if (options.batch) ctx.timers.registerEventTime(END_OF_INPUT);
      }
      const before = options.batch || first ? undefined : resultRow(ctx.key, state!);
      if (options.updatingInput) {
        const change = record as Change;
        state = change.op === '+I' || change.op === '+U' ? acc.add(state!, change.row) : acc.retract(state!, change.row);
      } else state = acc.add(state!, record as Row);
      // The accumulator changes in place; it is set again (and its size estimated again, a walk
      // of all it holds) when new, and as its row count doubles: amortized constant per row.
      const rows = acc.count(state);
      if (first || (rows > 0 && (rows & (rows - 1)) === 0)) value.set(state);
      if (options.batch) return;
      if (rows <= 0) {
        value.clear();
        if (before !== undefined) emit({ op: '-D', row: before } satisfies Change);
        return;
      }
      const after = resultRow(ctx.key, state);
      if (before === undefined) emit({ op: '+I', row: after } satisfies Change);
      else if (!sameRow(before, after)) {
        emit({ op: '-U', row: before } satisfies Change);
        emit({ op: '+U', row: after } satisfies Change);
      }
    },
    onTimer(_time, ctx, emit) {
      const state = ctx.state.value<unknown[]>('acc').get();
      if (state !== undefined && acc.count(state) > 0) emit(resultRow(ctx.key, state));
    },
  };
}

export function sameRow(a: Row, b: Row): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

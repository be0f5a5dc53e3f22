/**
 * `ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) ... WHERE rn <= N` (Flink's AppendOnlyTopN):
 * the first N rows of each partition key in keyed state, in order; a row that enters gives
 * `+I` (and `-D` for the row it pushes out), and where the rank is a column of the result,
 * the rows it moves down give `-U`/`+U` of their new rank. Deduplication is the N = 1 case.
 * Ties keep the row that came first. In batch mode the top rows are given once, at the end.
 */
import type { ProcessFunction } from '../../runtime/operators/ProcessFunction.js';
import type { Change, Row } from '../planner/Connectors.js';
import { END_OF_INPUT } from './GroupAggregate.js';

export function topN(limit: number, compare: (a: Row, b: Row) => number, options: { withRank: boolean; batch: boolean }): ProcessFunction<Row, unknown> {
  const ranked = (row: Row, rank: number): Row => (options.withRank ? [...row, rank] : row);
  return {
    processElement(row, ctx, emit) {
      const state = ctx.state.value<Row[]>('top');
      const top = state.get() ?? [];
      if (top.length === 0 && options.batch) ctx.timers.registerEventTime(END_OF_INPUT);
      // The place after every row it does not come before: ties keep the earlier row first.
      let at = top.length;
      while (at > 0 && compare(row, top[at - 1]!) < 0) at--;
      if (at >= limit) return;
      top.splice(at, 0, row);
      const out = top.length > limit ? top.pop() : undefined;
      state.set(top);
      if (options.batch) return;
      if (out !== undefined) emit({ op: '-D', row: ranked(out, limit) } satisfies Change);
      if (options.withRank) {
        // The rows it moved down, from rank i to rank i + 1.
        for (let i = at + 1; i < top.length; i++) {
          emit({ op: '-U', row: ranked(top[i]!, i) } satisfies Change);
          emit({ op: '+U', row: ranked(top[i]!, i + 1) } satisfies Change);
        }
      }
      emit({ op: '+I', row: ranked(row, at + 1) } satisfies Change);
    },
    onTimer(_time, ctx, emit) {
      (ctx.state.value<Row[]>('top').get() ?? []).forEach((row, i) => emit(ranked(row, i + 1)));
    },
  };
}

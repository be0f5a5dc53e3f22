/**
 * Window Top-N (Flink's WindowRankOperator): `ROW_NUMBER() OVER (PARTITION BY window_start,
 * window_end, ... ORDER BY o) ... WHERE rn <= N` over a window TVF or a window aggregate. Each
 * partition key is one window's: its best N rows are kept in keyed state as they come and given
 * once, ranked, when the watermark passes the window's end, so the result is append-only. A row
 * of a window the watermark already passed is late and dropped. Ties keep the row that came first.
 */
import type { ProcessFunction } from '../../runtime/operators/ProcessFunction.js';
import type { Row } from '../planner/Connectors.js';

export function windowTopN(limit: number, compare: (a: Row, b: Row) => number, options: { withRank: boolean; windowEnd: (row: Row) => number }): ProcessFunction<Row, Row> {
  return {
    processElement(row, ctx) {
      const end = options.windowEnd(row);
      if (end - 1 <= ctx.currentWatermark) return;
      const state = ctx.state.value<Row[]>('top');
      const top = state.get() ?? [];
      if (top.length === 0) ctx.timers.registerEventTime(end - 1);
      let at = top.length;
      while (at > 0 && compare(row, top[at - 1]!) < 0) at--;
      if (at >= limit) return;
      top.splice(at, 0, row);
      if (top.length > limit) top.pop();
      state.set(top);
    },
    onTimer(_time, ctx, emit) {
      const state = ctx.state.value<Row[]>('top');
      (state.get() ?? []).forEach((row, i) => emit(options.withRank ? [...row, i + 1] : row));
      state.clear();
    },
  };
}

/**
 * A regular join of two keyed inputs (Flink's StreamingJoinOperator): each side's rows kept
 * in keyed state, each arriving row joined with the other side's rows of its key, the pairs
 * that pass the residual condition given out at once. Inner joins of append-only inputs are
 * append-only. An outer join (batch mode) also gives each row that found no partner, padded
 * with nulls, when the input ends.
 */
import type { CoProcessFunction } from '../../runtime/operators/ProcessFunction.js';
import type { JoinType } from '../parser/Ast.js';
import type { Row } from '../planner/Connectors.js';
import { END_OF_INPUT } from './GroupAggregate.js';

export function regularJoin(type: JoinType, widths: [number, number], residual: ((row: Row) => boolean) | undefined): CoProcessFunction<Row, Row, Row> {
  const outerLeft = type === 'left' || type === 'full';
  const outerRight = type === 'right' || type === 'full';
  const nulls = (n: number): null[] => new Array<null>(n).fill(null);
  const arrive = (side: 0 | 1) =>
    function (row: Row, ctx: Parameters<CoProcessFunction<Row, Row, Row>['processElement1']>[1], emit: (r: Row) => void): void {
      const mine = ctx.state.list<Row>(side === 0 ? 'left' : 'right');
      const theirs = ctx.state.list<Row>(side === 0 ? 'right' : 'left');
      const outer = side === 0 ? outerLeft : outerRight;
      const theirsOuter = side === 0 ? outerRight : outerLeft;
      let matched = false;
      const partners = theirs.get();
      for (let i = 0; i < partners.length; i++) {
        const other = partners[i]!;
        const joined = side === 0 ? [...row, ...other] : [...other, ...row];
        if (residual !== undefined && !residual(joined)) continue;
        matched = true;
        if (theirsOuter) ctx.state.value<boolean>(`matched-${side === 0 ? 'right' : 'left'}-${i}`).set(true);
        emit(joined);
      }
      if (outer && matched) ctx.state.value<boolean>(`matched-${side === 0 ? 'left' : 'right'}-${mine.get().length}`).set(true);
      mine.add(row);
      if (outerLeft || outerRight) ctx.timers.registerEventTime(END_OF_INPUT);
    };
  return {
    processElement1: arrive(0),
    processElement2: arrive(1),
    onTimer(_time, ctx, emit) {
      if (outerLeft) {
        ctx.state.list<Row>('left').get().forEach((row, i) => {
          if (!ctx.state.value<boolean>(`matched-left-${i}`).get()) emit([...row, ...nulls(widths[1])]);
        });
      }
      if (outerRight) {
        ctx.state.list<Row>('right').get().forEach((row, i) => {
          if (!ctx.state.value<boolean>(`matched-right-${i}`).get()) emit([...nulls(widths[0]), ...row]);
        });
      }
    },
  };
}

/**
 * A GROUP BY of a CUMULATE window TVF's window_start, window_end (Flink's cumulative window
 * aggregate over slices): windows of `size` ms from aligned starts, each growing by `step`, so
 * [start, start + step), [start, start + 2 step), ... [start, start + size). Per key, each row
 * goes into the accumulator of its slice (the step it falls in); when the watermark passes a
 * step's end, that slice is merged into its window's running accumulator and the window up to
 * that end is given out, every later step's too (a row falls in every window that ends after it).
 * A row whose slice the watermark already passed is late and dropped, as the window operator's.
 */
import type { ProcessFunction } from '../../runtime/operators/ProcessFunction.js';
import { windowStart } from '../../runtime/windows/WindowAssigner.js';
import type { Accumulator } from '../planner/Aggregates.js';
import type { Row } from '../planner/Connectors.js';

export interface CumulateWindows {
  step: number;
  size: number;
  /** Where windows start, as the engine's assigners' offset. */
  offset: number;
  /** The index of the DESCRIPTOR column in the input rows. */
  time: number;
  /** A window bound as shown: its wall clock where the windows follow a zone's. */
  wall: (ms: number) => number;
}

export function cumulateAggregate(acc: Accumulator, keyValues: (key: unknown) => unknown[], w: CumulateWindows): ProcessFunction<Row, Row> {
  return {
    processElement(row, ctx) {
      const t = row[w.time] as number;
      const start = windowStart(t, w.size, w.offset);
      const sliceEnd = windowStart(t, w.step, w.offset) + w.step;
      if (sliceEnd - 1 <= ctx.currentWatermark) return;
      const slices = ctx.state.map<number, unknown[]>('slices');
      let slice = slices.get(sliceEnd);
      const first = slice === undefined;
      if (first) {
        slice = acc.create();
        for (let end = sliceEnd; end <= start + w.size; end += w.step) ctx.timers.registerEventTime(end - 1);
      }
      slice = acc.add(slice!, row);
      // The accumulator changes in place: set again when new and as its rows double (for the state's size), as GroupAggregate's.
      const rows = acc.count(slice);
      if (first || (rows & (rows - 1)) === 0) slices.set(sliceEnd, slice);
    },
    onTimer(time, ctx, emit) {
      const end = time + 1;
      const start = windowStart(time, w.size, w.offset);
      const slices = ctx.state.map<number, unknown[]>('slices');
      const running = ctx.state.map<number, unknown[]>('windows');
      let window = running.get(start) ?? acc.create();
      const slice = slices.get(end);
      if (slice !== undefined) {
        window = acc.merge(window, slice);
        slices.delete(end);
      }
      if (end >= start + w.size) running.delete(start);
      else running.set(start, window);
      emit([...keyValues(ctx.key), w.wall(start), w.wall(end), ...acc.result(window)] as Row);
    },
  };
}

import type { OperatorOf } from '../../job/JobDefinition.js';
import { estimateBytes } from '../state/KeyedState.js';
import { assignerProblem } from '../windows/WindowAssigner.js';
import { WindowOperator, type WindowContents } from '../windows/WindowOperator.js';
import { firstProblem, keyPairProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';
import { latenessProblem } from './Window.js';

/** The records of each side that one key has in one window. */
interface Sides {
  left: unknown[];
  right: unknown[];
}

/**
 * `{ kind: 'windowJoin', windowJoin: { keys, assigner, combine } }`: `combine(left, right)`
 * for every pair of a record of input 0 and one of input 1 with equal keys in the same
 * window, when the window fires (Flink's window join). Both inputs are read together;
 * first in a stage of two hash-partitioned inputs.
 */
export const WINDOW_JOIN: OperatorSpec<OperatorOf<'windowJoin'>> = {
  kind: 'windowJoin',
  holdsData: true,
  placement: { first: { inputs: 2, partitioning: 'hash' } },
  validate: ({ windowJoin: spec }) =>
    firstProblem(
      keyPairProblem('windowJoin', spec?.keys),
      assignerProblem(spec?.assigner),
      notAFunction('windowJoin.combine', spec?.combine),
      latenessProblem(spec?.allowedLateness),
    ),
  compileInputs: ({ windowJoin: spec }, next, context) => {
    const { combine } = spec;
    const contents: WindowContents<Sides> = {
      create: () => ({ left: [], right: [] }),
      add: (sides, record, input) => {
        (input === 0 ? sides.left : sides.right).push(record);
        return sides;
      },
      merge: (a, b) => ({ left: [...a.left, ...b.left], right: [...a.right, ...b.right] }),
      fire: (_key, _start, _end, { left, right }, emit) => {
        for (const l of left) for (const r of right) emit(combine(l, r));
      },
      addedBytes: (record) => 8 + estimateBytes(record),
    };
    const window = new WindowOperator(spec.assigner, contents, spec.keys, spec.allowedLateness ?? 0, next, context);
    return {
      push: (input, record) => window.push(input, record),
      end: () => window.end(),
      watermark: (watermark, origin) => window.watermark(watermark, origin),
    };
  },
};

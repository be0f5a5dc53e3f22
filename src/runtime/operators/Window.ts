import type { Step } from '../Chain.js';
import { assignerProblem, type WindowAssigner } from '../windows/WindowAssigner.js';
import { WindowOperator, type WindowContents } from '../windows/WindowOperator.js';
import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';
import type { WindowAggregate } from './ProcessFunction.js';
import type { KeyFn } from '../../job/KeyFn.js';

/**
 * Keyed event-time windows folded incrementally (Flink's window(...).aggregate(...)):
 * `{ key, start, end, value }` once per key and window when the watermark passes its
 * end (`{ start, end, value }` when `global`). Records later than `allowedLateness`
 * (0) past a window's end are dropped and counted.
 */
export type WindowDefinition = { kind: 'window'; window: { key: KeyFn; assigner: WindowAssigner; aggregate: WindowAggregate; allowedLateness?: number; global?: boolean } };

/**
 * `{ kind: 'window', window: { key, assigner, aggregate, allowedLateness, global } }`:
 * keyed event-time windows folded incrementally, `{ key, start, end, value }` per key and
 * window (`{ start, end, value }` for a global one, windowAll). First in a stage whose
 * one input is hash-partitioned by the key (a global window's stage has one task).
 */
export const WINDOW: OperatorSpec<WindowDefinition> = {
  kind: 'window',
  eventTime: 'reads',
  holdsData: true,
  placement: { first: { inputs: 1, partitioning: 'hash' } },
  validate: ({ window: spec }) =>
    firstProblem(
      notAFunction('window.key', spec?.key),
      assignerProblem(spec?.assigner),
      ...(['create', 'add', 'merge', 'result'] as const).map((f) => notAFunction(`aggregate.${f}`, spec?.aggregate?.[f])),
      latenessProblem(spec?.allowedLateness),
    ),
  compile: ({ window: spec }, next, context): Step => {
    const window = new WindowOperator(spec.assigner, aggregating(spec.aggregate, spec.global === true), [spec.key], spec.allowedLateness ?? 0, next, context);
    return {
      push: (record) => window.push(0, record),
      end: () => window.end(),
      watermark: (watermark, origin) => window.watermark(watermark, origin),
    };
  },
};

/** A window's contents as an incremental aggregate: one result a window. */
function aggregating(aggregate: WindowAggregate, global: boolean): WindowContents<unknown> {
  return {
    create: () => aggregate.create(),
    add: (acc, record) => aggregate.add(acc, record),
    merge: (a, b) => aggregate.merge(a, b),
    fire: global
      ? (_key, start, end, acc, emit) => emit({ start, end, value: aggregate.result(acc) })
      : (key, start, end, acc, emit) => emit({ key, start, end, value: aggregate.result(acc) }),
    addedBytes: () => 0,
  };
}

export function latenessProblem(lateness: unknown): string | undefined {
  return lateness === undefined || (typeof lateness === 'number' && lateness >= 0) ? undefined : `needs allowedLateness of 0 or more ms, not ${JSON.stringify(lateness)}`;
}

import { KeyedProcessor } from '../KeyedProcessor.js';
import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';
import type { KeyFn } from '../../job/KeyFn.js';
import type { ProcessFunction } from './ProcessFunction.js';

/** A keyed process function with state and timers (Flink's KeyedProcessFunction); first in a stage of one hash-partitioned input. */
export type ProcessDefinition = { kind: 'process'; process: { key: KeyFn; fn: ProcessFunction } };

/**
 * `{ kind: 'process', process: { key, fn } }`: a keyed process function (Flink's
 * KeyedProcessFunction) with value, list and map state per key and event- and
 * processing-time timers; first in a stage whose one input is hash-partitioned by the key.
 */
export const PROCESS: OperatorSpec<ProcessDefinition> = {
  kind: 'process',
  holdsData: true,
  placement: { first: { inputs: 1, partitioning: 'hash' } },
  validate: ({ process: spec }) =>
    firstProblem(
      notAFunction('process.key', spec?.key),
      notAFunction('processElement', spec?.fn?.processElement),
      spec?.fn?.onTimer === undefined ? undefined : notAFunction('onTimer', spec.fn.onTimer),
    ),
  compile: ({ process: { key, fn } }, next, context) => {
    const processor = new KeyedProcessor([key], [fn.processElement.bind(fn)], fn.onTimer?.bind(fn), next, context);
    return {
      push: (record) => processor.push(0, record),
      end: () => processor.end(),
      watermark: (watermark, origin) => processor.watermark(watermark, origin),
    };
  },
};

import type { OperatorOf } from '../../job/JobDefinition.js';
import { KeyedProcessor } from '../KeyedProcessor.js';
import { firstProblem, keyPairProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';

/**
 * `{ kind: 'coProcess', coProcess: { keys: [key1, key2], fn } }`: two keyed inputs read
 * together, record by record, with one state and one set of timers per key (Flink's
 * KeyedCoProcessFunction): a stateful join. First in a stage of two hash-partitioned inputs.
 */
export const CO_PROCESS: OperatorSpec<OperatorOf<'coProcess'>> = {
  kind: 'coProcess',
  holdsData: true,
  placement: { first: { inputs: 2, partitioning: 'hash' } },
  validate: ({ coProcess: spec }) =>
    firstProblem(
      keyPairProblem('coProcess', spec?.keys),
      notAFunction('processElement1', spec?.fn?.processElement1),
      notAFunction('processElement2', spec?.fn?.processElement2),
      spec?.fn?.onTimer === undefined ? undefined : notAFunction('onTimer', spec.fn.onTimer),
    ),
  compileInputs: ({ coProcess: { keys, fn } }, next, context) => {
    const processor = new KeyedProcessor(keys, [fn.processElement1.bind(fn), fn.processElement2.bind(fn)], fn.onTimer?.bind(fn), next, context);
    return {
      push: (input, record) => processor.push(input, record),
      end: () => processor.end(),
      watermark: (watermark, origin) => processor.watermark(watermark, origin),
    };
  },
};

import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';

/** Folds the task's records into one value, emitted at the end of its input. */
export type AggregateDefinition = { kind: 'aggregate'; aggregate: { zero: () => unknown; add: (accumulator: unknown, record: unknown) => unknown } };

/** `{ kind: 'aggregate', aggregate: { zero, add } }`: the task's records folded into one value, emitted at the end of its input. */
export const AGGREGATE: OperatorSpec<AggregateDefinition> = {
  kind: 'aggregate',
  holdsData: false,
  endsOnly: true,
  placement: 'anywhere',
  validate: (op) => firstProblem(notAFunction('aggregate.zero', op.aggregate?.zero), notAFunction('aggregate.add', op.aggregate?.add)),
  compile: (op, { push: next, end: endNext }) => {
    const { zero, add } = op.aggregate;
    let accumulator = zero();
    return {
      push: (r) => {
        accumulator = add(accumulator, r);
      },
      end: async () => {
        await next(accumulator);
        await endNext();
      },
    };
  },
};

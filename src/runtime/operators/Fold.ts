import type { OperatorOf } from '../../job/JobDefinition.js';
import { holding } from '../Chain.js';
import { notAFunction, type OperatorSpec } from './OperatorSpec.js';

/**
 * `{ kind: 'fold', fold: (memory) => SpillingFold }`: a keyed fold written by the user,
 * made once per task with its share of managed memory (OperatorMemory), fed every
 * record, and finished when the input ends; it keeps within the share and spills past
 * it. The hook for folds the built-in operators do not express well (the built-in
 * word count adds up packed byte counts with one).
 */
export const FOLD: OperatorSpec<OperatorOf<'fold'>> = {
  kind: 'fold',
  holdsData: true,
  endsOnly: true,
  placement: 'anywhere',
  validate: (op) => notAFunction('fold', op.fold),
  compile: (op, { push: next, end: endNext }, { memory }) => holding(op.fold(memory), next, endNext),
};

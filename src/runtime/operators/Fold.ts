import { holding } from '../Chain.js';
import { notAFunction, type OperatorSpec } from './OperatorSpec.js';
import type { OperatorMemory } from '../memory/OperatorMemory.js';
import type { SpillingFold } from '../memory/KeyPartitions.js';

/**
 * A keyed fold of the user's own: `fold` makes it once per task, given the task's
 * share of managed memory for it; it keeps within the share and spills past it.
 */
export type FoldDefinition = { kind: 'fold'; fold: (memory: OperatorMemory) => SpillingFold };

/**
 * `{ kind: 'fold', fold: (memory) => SpillingFold }`: a keyed fold written by the user,
 * made once per task with its share of managed memory (OperatorMemory), fed every
 * record, and finished when the input ends; it keeps within the share and spills past
 * it. The hook for folds the built-in operators do not express well (the built-in
 * word count adds up packed byte counts with one).
 */
export const FOLD: OperatorSpec<FoldDefinition> = {
  kind: 'fold',
  holdsData: true,
  endsOnly: true,
  placement: 'anywhere',
  validate: (op) => notAFunction('fold', op.fold),
  compile: (op, { push: next, end: endNext }, { memory }) => holding(op.fold(memory), next, endNext),
};

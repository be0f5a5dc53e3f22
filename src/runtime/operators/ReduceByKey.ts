import { SpillingAggregator } from '../memory/SpillingAggregator.js';
import { holding } from '../Chain.js';
import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';
import type { KeyFn } from '../../job/KeyFn.js';

/** Keyed aggregation over the whole input; must be associative and commutative, so it is also applied map-side. */
export type ReduceByKeyDefinition = { kind: 'reduceByKey'; reduceByKey: { key: KeyFn; reduce: (a: unknown, b: unknown) => unknown } };

/**
 * `{ kind: 'reduceByKey', reduceByKey: { key, reduce } }`: one record per key, folded
 * with an associative and commutative reduce, spilling past its budget. The same
 * reduce folds each producer's records before a hash exchange (map-side combine).
 */
export const REDUCE_BY_KEY: OperatorSpec<ReduceByKeyDefinition> = {
  kind: 'reduceByKey',
  holdsData: true,
  endsOnly: true,
  placement: 'anywhere',
  validate: (op) => firstProblem(notAFunction('reduceByKey.key', op.reduceByKey?.key), notAFunction('reduceByKey.reduce', op.reduceByKey?.reduce)),
  compile: (op, { push: next, end: endNext }, { memory }) => holding(new SpillingAggregator(op.reduceByKey.key, op.reduceByKey.reduce, memory.operatorBudget, memory), next, endNext),
  mapSideCombiner: (op) => ({ key: op.reduceByKey.key, create: (r) => r, merge: op.reduceByKey.reduce, toRecord: (_, c) => c }),
};

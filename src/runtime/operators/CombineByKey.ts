import type { KeyFn } from '../../job/KeyFn.js';
import { SpillingAggregator } from '../memory/SpillingAggregator.js';
import { holding } from '../Chain.js';
import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';

/**
 * Spark's combineByKey: a combiner per key, built from the first record (create),
 * folded with the next ones (merge), and combiners of the same key merged
 * (mergeCombiners). Applied map-side; the stage emits [key, combiner]. Its only
 * input must be hash-partitioned.
 */
export interface CombineByKey {
  key: KeyFn;
  create: (record: unknown) => unknown;
  merge: (combiner: unknown, record: unknown) => unknown;
  mergeCombiners: (a: unknown, b: unknown) => unknown;
}

export type CombineByKeyDefinition = { kind: 'combineByKey'; combineByKey: CombineByKey };

type Pair = [unknown, unknown];
const pairKey: KeyFn = (r) => (r as Pair)[0];

/**
 * `{ kind: 'combineByKey', combineByKey: { key, create, merge, mergeCombiners } }`
 * (Spark's): each producer folds its records into a combiner per key (map-side) and
 * ships [key, combiner] routed by key; this operator merges the combiners of a key.
 * So it must be first in a stage of one hash-partitioned input.
 */
export const COMBINE_BY_KEY: OperatorSpec<CombineByKeyDefinition> = {
  kind: 'combineByKey',
  holdsData: true,
  endsOnly: true,
  placement: { first: { inputs: 1, partitioning: 'hash' } },
  validate: ({ combineByKey: spec }) =>
    firstProblem(
      ...(['key', 'create', 'merge', 'mergeCombiners'] as const).map((field) => notAFunction(`combineByKey.${field}`, spec?.[field])),
    ),
  compile: (op, { push: next, end: endNext }, { memory }) => {
    const merge = op.combineByKey.mergeCombiners;
    // The pairs came over the exchange, made by the producers' combiners: the one held is the engine's to fold into.
    const mergePairs = (a: unknown, b: unknown): Pair => {
      const held = a as Pair;
      held[1] = merge(held[1], (b as Pair)[1]);
      return held;
    };
    return holding(new SpillingAggregator(pairKey, mergePairs, memory.operatorBudget, memory), next, endNext);
  },
  mapSideCombiner: (op) => {
    const { key, create, merge } = op.combineByKey;
    return { key, create, merge, toRecord: (k, c) => [k, c] };
  },
  routing: () => ({ type: 'hash', key: pairKey }),
};

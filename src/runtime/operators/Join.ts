import { HybridHashJoin } from '../memory/HybridHashJoin.js';
import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';
import type { KeyFn } from '../../job/KeyFn.js';

/** Hash join of input 0 (build side) and input 1 (probe side) on their keys; must be the first operator. */
export type JoinDefinition = { kind: 'join'; join: { keys: [KeyFn, KeyFn]; combine: (left: unknown, right: unknown) => unknown } };

/**
 * `{ kind: 'join', join: { keys: [buildKey, probeKey], combine } }`: a hybrid hash join
 * of input 0 (the build side, read to its end) and input 1 (probing it), spilling past
 * its budget. It reads its stage's two inputs itself, so it must be their first operator.
 */
export const JOIN: OperatorSpec<JoinDefinition> = {
  kind: 'join',
  holdsData: true,
  endsOnly: true,
  placement: { first: { inputs: 2 } },
  validate: ({ join: spec }) =>
    firstProblem(
      Array.isArray(spec?.keys) && spec.keys.length === 2 ? undefined : 'needs keys: [a key function of input 0, one of input 1]',
      ...[0, 1].map((i) => notAFunction(`join.keys[${i}]`, spec?.keys?.[i])),
      notAFunction('join.combine', spec?.combine),
    ),
  readInputs: async (op, input, push, { memory }) => {
    const join = new HybridHashJoin(op.join, memory.operatorBudget, memory);
    await input(0).forEach((r) => join.build(r));
    await input(1).forEach((r) => join.probe(r, push));
    await join.finish(push);
  },
};

import type { OperatorOf } from '../../job/JobDefinition.js';
import { HybridHashJoin } from '../memory/HybridHashJoin.js';
import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';

/**
 * `{ kind: 'join', join: { keys: [buildKey, probeKey], combine } }`: a hybrid hash join
 * of input 0 (the build side, read to its end) and input 1 (probing it), spilling past
 * its budget. It reads its stage's two inputs itself, so it must be their first operator.
 */
export const JOIN: OperatorSpec<OperatorOf<'join'>> = {
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

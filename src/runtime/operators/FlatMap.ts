import type { OperatorOf } from '../../job/JobDefinition.js';
import { flatMapping } from '../Chain.js';
import { notAFunction, type OperatorSpec } from './OperatorSpec.js';

/** `{ kind: 'flatMap', flatMap: f }`: the records f returns or emits for each record. */
export const FLAT_MAP: OperatorSpec<OperatorOf<'flatMap'>> = {
  kind: 'flatMap',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => notAFunction('flatMap', op.flatMap),
  compile: (op, { push: next, end: endNext }) => ({ push: flatMapping(op.flatMap, next), end: endNext }),
};

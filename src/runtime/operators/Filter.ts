import type { OperatorOf } from '../../job/JobDefinition.js';
import { notAFunction, type OperatorSpec } from './OperatorSpec.js';

/** `{ kind: 'filter', filter: f }`: the records f keeps. */
export const FILTER: OperatorSpec<OperatorOf<'filter'>> = {
  kind: 'filter',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => notAFunction('filter', op.filter),
  compile: (op, { push: next, end: endNext }) => {
    const f = op.filter;
    return { push: (r) => (f(r) ? next(r) : undefined), end: endNext };
  },
};

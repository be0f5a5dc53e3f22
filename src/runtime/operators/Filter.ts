import { notAFunction, type OperatorSpec } from './OperatorSpec.js';

export type FilterDefinition = { kind: 'filter'; filter: (record: unknown) => boolean };

/** `{ kind: 'filter', filter: f }`: the records f keeps. */
export const FILTER: OperatorSpec<FilterDefinition> = {
  kind: 'filter',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => notAFunction('filter', op.filter),
  compile: (op, { push: next, end: endNext }) => {
    const f = op.filter;
    return { push: (r) => (f(r) ? next(r) : undefined), end: endNext };
  },
};

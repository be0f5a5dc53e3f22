import type { OperatorOf } from '../../job/JobDefinition.js';
import { notAFunction, type OperatorSpec } from './OperatorSpec.js';

/** `{ kind: 'map', map: f }`: one record out per record in. */
export const MAP: OperatorSpec<OperatorOf<'map'>> = {
  kind: 'map',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => notAFunction('map', op.map),
  compile: (op, { push: next, end: endNext }) => {
    const f = op.map;
    return { push: (r) => next(f(r)), end: endNext };
  },
};

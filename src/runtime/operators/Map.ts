import { notAFunction, type OperatorSpec } from './OperatorSpec.js';

export type MapDefinition = { kind: 'map'; map: (record: unknown) => unknown };

/** `{ kind: 'map', map: f }`: one record out per record in. */
export const MAP: OperatorSpec<MapDefinition> = {
  kind: 'map',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => notAFunction('map', op.map),
  compile: (op, { push: next, end: endNext }) => {
    const f = op.map;
    return { push: (r) => next(f(r)), end: endNext };
  },
};

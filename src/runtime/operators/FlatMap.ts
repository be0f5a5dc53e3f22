import { flatMapping } from '../Chain.js';
import { notAFunction, type OperatorSpec } from './OperatorSpec.js';

/**
 * Returns the records made from one record, or passes each to `emit` and returns
 * nothing (Flink's Collector): no array per record, each goes straight on.
 */
export type FlatMapDefinition = { kind: 'flatMap'; flatMap: (record: unknown, emit: (record: unknown) => void) => Iterable<unknown> | void };

/** `{ kind: 'flatMap', flatMap: f }`: the records f returns or emits for each record. */
export const FLAT_MAP: OperatorSpec<FlatMapDefinition> = {
  kind: 'flatMap',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => notAFunction('flatMap', op.flatMap),
  compile: (op, { push: next, end: endNext }) => ({ push: flatMapping(op.flatMap, next), end: endNext }),
};

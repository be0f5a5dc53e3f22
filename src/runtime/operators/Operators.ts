/**
 * The registry of operator kinds: one spec per kind, each in a file of its own. A new
 * operator is its spec's file, its shape in JobDefinition's `Operator` union, and its
 * line here (the compiler checks that every kind of the union has one).
 */
import { InvalidJobError } from '../../job/InvalidJobError.js';
import type { Operator, OperatorKind, OperatorOf } from '../../job/JobDefinition.js';
import { ACCUMULATE } from './Accumulate.js';
import { AGGREGATE } from './Aggregate.js';
import { ASSIGN_TIMESTAMPS } from './AssignTimestamps.js';
import { CO_PROCESS } from './CoProcess.js';
import { COMBINE_BY_KEY } from './CombineByKey.js';
import { FILTER } from './Filter.js';
import { FLAT_MAP } from './FlatMap.js';
import { FOLD } from './Fold.js';
import { JOIN } from './Join.js';
import { MAP } from './Map.js';
import type { OperatorSpec } from './OperatorSpec.js';
import { PROCESS } from './Process.js';
import { REDUCE_BY_KEY } from './ReduceByKey.js';
import { SORT_BY } from './SortBy.js';
import { WINDOW } from './Window.js';
import { WINDOW_JOIN } from './WindowJoin.js';

const SPECS: { readonly [K in OperatorKind]: OperatorSpec<OperatorOf<K>> } = {
  map: MAP,
  flatMap: FLAT_MAP,
  filter: FILTER,
  aggregate: AGGREGATE,
  accumulate: ACCUMULATE,
  reduceByKey: REDUCE_BY_KEY,
  combineByKey: COMBINE_BY_KEY,
  sortBy: SORT_BY,
  join: JOIN,
  fold: FOLD,
  assignTimestamps: ASSIGN_TIMESTAMPS,
  process: PROCESS,
  coProcess: CO_PROCESS,
  window: WINDOW,
  windowJoin: WINDOW_JOIN,
};

/** The registered kinds, in the order they are listed to a user. */
export const OPERATOR_KINDS = Object.keys(SPECS) as OperatorKind[];

function isKind(kind: unknown): kind is OperatorKind {
  return typeof kind === 'string' && Object.hasOwn(SPECS, kind);
}

/** The spec of a normalized operator. */
export function operatorSpec<Op extends Operator>(op: Op): OperatorSpec<Op> {
  return SPECS[op.kind] as unknown as OperatorSpec<Op>;
}

/**
 * An operator in the `kind` shape: `{ kind: 'map', map: f }` as it is, or the old
 * key-only shape `{ map: f }` given its kind (a registered kind's field, alone). The
 * one place that tells operators apart by their keys. Refuses anything else with
 * SPW_ERR_INVALID_JOB naming the known kinds.
 */
export function normalizeOperator(op: unknown): Operator {
  if (op === null || typeof op !== 'object') throw unknownOperator(JSON.stringify(op) ?? String(op));
  const { kind } = op as { kind?: unknown };
  if (kind !== undefined) {
    if (!isKind(kind)) throw unknownOperator(`kind ${JSON.stringify(kind)}`);
    return op as Operator;
  }
  const keys = Object.keys(op).filter(isKind);
  if (keys.length !== 1) throw unknownOperator(`with the fields ${JSON.stringify(Object.keys(op))}`);
  return { kind: keys[0], ...op } as Operator;
}

function unknownOperator(what: string): InvalidJobError {
  return new InvalidJobError(`unknown operator ${what}: an operator is one of the kinds ${OPERATOR_KINDS.join(', ')}, as { kind: 'map', map: f }`);
}

/** How many of `operators` hold data, and so share their slot's managed memory. */
export function dataHolders(operators: readonly Operator[]): number {
  return operators.filter((op) => operatorSpec(op).holdsData).length;
}

/**
 * The registry of operator kinds: one spec per kind, each in a file of its own with the
 * shape of its definition. A new operator is its spec's file and its registration here;
 * the `Operator` union, validation and the planner read the registry.
 */
import { KindRegistry } from '../../job/KindRegistry.js';
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

/** The built-in operators, each registered below; `Operator` is the union of their definitions. */
const BUILTIN_OPERATORS = [MAP, FLAT_MAP, FILTER, AGGREGATE, ACCUMULATE, REDUCE_BY_KEY, COMBINE_BY_KEY, SORT_BY, JOIN, FOLD, ASSIGN_TIMESTAMPS, PROCESS, CO_PROCESS, WINDOW, WINDOW_JOIN] as const;

/**
 * One operator of a stage's chain, told apart by its `kind` (the field of the same name
 * holds what it runs): the definition of a registered spec. The old key-only shape
 * (`{ map: f }`) is also accepted from hand-written jobs and normalized on validation.
 */
export type Operator = DefinitionOf<(typeof BUILTIN_OPERATORS)[number]>;

/** The kinds of operator. */
export type OperatorKind = Operator['kind'];

/** The operator of one kind. */
export type OperatorOf<K extends OperatorKind> = Extract<Operator, { kind: K }>;

type DefinitionOf<S> = S extends OperatorSpec<infer Op> ? Op : never;

const OPERATORS = new KindRegistry<OperatorSpec<Operator>>('operator', ", as { kind: 'map', map: f }");
for (const spec of BUILTIN_OPERATORS) OPERATORS.register(spec as OperatorSpec<Operator>);

/** The registered kinds, in the order they are listed to a user. */
export const OPERATOR_KINDS = OPERATORS.kinds as OperatorKind[];

/** The spec of a normalized operator. */
export function operatorSpec<Op extends Operator>(op: Op): OperatorSpec<Op> {
  return OPERATORS.spec(op.kind) as unknown as OperatorSpec<Op>;
}

/** An operator in the `kind` shape: as it is, or the old key-only shape `{ map: f }` given its kind (KindRegistry.normalize). */
export function normalizeOperator(op: unknown): Operator {
  return OPERATORS.normalize(op) as Operator;
}

/** How many of `operators` hold data, and so share their slot's managed memory. */
export function dataHolders(operators: readonly Operator[]): number {
  return operators.filter((op) => operatorSpec(op).holdsData).length;
}

import { ExternalSorter } from '../memory/ExternalSorter.js';
import { holding } from '../Chain.js';
import { notAFunction, type OperatorSpec } from './OperatorSpec.js';
import type { KeyFn } from '../../job/KeyFn.js';

/** Sorts the task's records by key at the end of its input. */
export type SortByDefinition = { kind: 'sortBy'; sortBy: { key: KeyFn } };

/** `{ kind: 'sortBy', sortBy: { key } }`: the task's records sorted by key at the end of its input, an external merge sort past its budget. */
export const SORT_BY: OperatorSpec<SortByDefinition> = {
  kind: 'sortBy',
  holdsData: true,
  endsOnly: true,
  placement: 'anywhere',
  validate: (op) => notAFunction('sortBy.key', op.sortBy?.key),
  compile: (op, { push: next, end: endNext }, { memory }) => holding(new ExternalSorter(op.sortBy.key, memory.operatorBudget, memory), next, endNext),
};

import type { OperatorOf } from '../../job/JobDefinition.js';
import { flatMapping } from '../Chain.js';
import type { OperatorSpec } from './OperatorSpec.js';

/**
 * `{ kind: 'accumulate', accumulate: { create, add, emit } }`: state per task fed every
 * record; its records go on as a flatMap's do, at the end waiting where the next step
 * has to, then the end.
 */
export const ACCUMULATE: OperatorSpec<OperatorOf<'accumulate'>> = {
  kind: 'accumulate',
  holdsData: false,
  placement: 'anywhere',
  validate: (op) => {
    const spec = op.accumulate as Partial<OperatorOf<'accumulate'>['accumulate']> | undefined;
    const missing = (['create', 'add', 'emit'] as const).filter((f) => typeof spec?.[f] !== 'function');
    return missing.length === 0 ? undefined : `needs the function${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`;
  },
  compile: ({ accumulate: spec }, { push: next, end: endNext }) => {
    const state = spec.create();
    return {
      push: flatMapping((r, emit) => spec.add(state, r, emit), next),
      end: async () => {
        const waiting = flatMapping((s, emit) => spec.emit(s, emit), next)(state);
        if (waiting) await waiting;
        await endNext();
      },
    };
  },
};

import type { SinkOf } from '../job/JobDefinition.js';
import type { SinkSpec } from './SinkSpec.js';

/** `{ kind: 'discard' }`: records are dropped (Nexmark's blackhole sink): what a job costs without its output. */
export const DISCARD_SINK: SinkSpec<SinkOf<'discard'>> = {
  kind: 'discard',
  validate: () => undefined,
  open: async () => ({ push: () => undefined, end: async () => undefined, abort: () => undefined }),
};

import type { SinkSpec } from './SinkSpec.js';

/** Records are dropped (a benchmark's blackhole). */
export type DiscardSinkDefinition = { kind: 'discard' };

/** `{ kind: 'discard' }`: records are dropped (Nexmark's blackhole sink): what a job costs without its output. */
export const DISCARD_SINK: SinkSpec<DiscardSinkDefinition> = {
  kind: 'discard',
  validate: () => undefined,
  open: async () => ({ push: () => undefined, end: async () => undefined, abort: () => undefined }),
};

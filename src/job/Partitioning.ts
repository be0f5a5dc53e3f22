import type { KeyFn } from './KeyFn.js';

/** How a stage's input is routed from its producers' subtasks to its own (ChannelSelector). */
export type Partitioning =
  | { type: 'hash'; key: KeyFn }
  | { type: 'range'; key: KeyFn; boundaries: (parallelism: number) => unknown[] }
  | { type: 'rebalance' }
  | { type: 'forward' }
  | { type: 'broadcast' };

import type { ServerOptions } from '../ServerOptions.js';

/** --slots: task slots of a TaskManager (each a thread). */
export const DEFAULT_SLOTS = 2;
/** --memory: network memory, shared by the task threads. */
export const DEFAULT_NETWORK_MEMORY = 256 << 20;
/** --managed-memory: divided among the slots for sorts, aggregations and joins. */
export const DEFAULT_MANAGED_MEMORY = 256 << 20;
/** --buffer-size: a network buffer (segment). */
export const DEFAULT_BUFFER_SIZE = 32 << 10;
/** --cancel-timeout: how long a canceled task may take to stop before its thread is terminated. */
export const DEFAULT_CANCEL_TIMEOUT_MS = 10_000;
/** How often a TaskManager heartbeats and sends its tasks' counters. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 1000;

/** A TaskManager's settings; each absent one takes the default named above. */
export interface TaskManagerOptions extends ServerOptions {
  jobManager: string;
  slots: number;
  /** Network memory, bytes. */
  memory: number;
  spillDir: string;
  /** Where its tasks write their checkpoint state, instead of where the job's checkpoints go. */
  checkpointDir?: string;
  /** The host the JobManager and peers reach it at; `host` if absent, required when `host` is a wildcard. */
  advertiseHost?: string;
  /** The JobManager refused this TaskManager's credentials (401): it cannot work, and must not retry. */
  onUnauthorized?: (error: Error) => void;
  heartbeatIntervalMs?: number;
  /** Deletes spillDir on stop (it was made for this process). */
  ownsSpillDir?: boolean;
  segmentSize?: number;
  cancelTimeoutMs?: number;
  /** A task thread's heap limit, bytes; V8's default if absent. */
  taskHeapBytes?: number;
  /** Managed memory, bytes, divided among the slots. */
  managedMemory?: number;
}

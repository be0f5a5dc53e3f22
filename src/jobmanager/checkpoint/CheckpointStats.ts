import type { CheckpointMetadata } from './CheckpointMetadata.js';

/**
 * A checkpoint's life, as GET /jobs/:id/checkpoints shows it.
 *
 *   IN_PROGRESS --> COMPLETED
 *        |
 *        +-------> FAILED   (declined, timed out, the job restarted or ended)
 */
export enum CheckpointStatus {
  IN_PROGRESS = 'IN_PROGRESS',
  COMPLETED = 'COMPLETED',
  FAILED = 'FAILED',
}

/** One task's part in a checkpoint. */
export interface TaskCheckpointStats {
  /** When its acknowledgement came, epoch ms. */
  acknowledged: number;
  /** Ms from its first barrier to its snapshot: until the last came (aligned), or until the alignment timed out; 0 at a source, about 0 unaligned. */
  alignmentMs: number;
  /** Ms from the trigger until its first barrier came (at a source: the trigger). */
  startDelayMs: number;
  /** Bytes of its state file. */
  bytes: number;
  /** Bytes of the in-flight buffers whose records it stored (unaligned). */
  inFlightBytes: number;
  unaligned: boolean;
}

/** One checkpoint or savepoint of a job. */
export interface CheckpointStats {
  id: number;
  status: CheckpointStatus;
  savepoint: boolean;
  triggered: number;
  completed?: number;
  durationMs?: number;
  /** Bytes of the state files of the tasks that acknowledged it so far. */
  bytes: number;
  /** Bytes of in-flight buffers the tasks stored with it so far (unaligned). */
  inFlightBytes: number;
  /** The longest alignment and start delay of a task so far, ms. */
  alignmentMs: number;
  startDelayMs: number;
  /** Whether any task took it unaligned. */
  unaligned: boolean;
  /** Its folder, once completed. */
  path?: string;
  /** Why it failed. */
  failure?: string;
  /** By task id. */
  tasks: Record<string, TaskCheckpointStats>;
}

/** How many of a job's checkpoints (savepoints too) completed, failed or were aborted, and are under way. */
export interface CheckpointCounts {
  completed: number;
  failed: number;
  inProgress: number;
}

/** What a job's record keeps of its checkpoints: the counts and the latest completed (what /metrics shows, and an ended job's view). */
export interface CheckpointSummary {
  counts: CheckpointCounts;
  latest?: CheckpointStats;
}

/** GET /jobs/:id/checkpoints: the counts, the latest completed, and the checkpoints shown, oldest first. */
export interface CheckpointsView extends CheckpointSummary {
  checkpoints: CheckpointStats[];
}

/** A task's acknowledgement, into its checkpoint's stats: the checkpoint's sums and longest times grow with it. */
export function addTask(stats: CheckpointStats, taskId: string, task: TaskCheckpointStats): void {
  stats.tasks[taskId] = task;
  stats.bytes += task.bytes;
  stats.inFlightBytes += task.inFlightBytes;
  stats.alignmentMs = Math.max(stats.alignmentMs, task.alignmentMs);
  stats.startDelayMs = Math.max(stats.startDelayMs, task.startDelayMs);
  stats.unaligned ||= task.unaligned;
}

/**
 * An ended job's view: its coordinator is gone, and of its checkpoints the store keeps
 * the savepoints only (the rest were deleted with the job); its record kept the counts
 * and the latest completed, shown with them.
 */
export function endedView(summary: CheckpointSummary | undefined, recorded: readonly CheckpointMetadata[]): CheckpointsView {
  const checkpoints = recorded.map(recordedStats);
  const latest = summary?.latest;
  if (latest !== undefined && !checkpoints.some((c) => c.id === latest.id)) checkpoints.push(latest);
  checkpoints.sort((a, b) => a.id - b.id);
  return { counts: summary?.counts ?? { completed: recorded.length, failed: 0, inProgress: 0 }, latest: latest ?? checkpoints.at(-1), checkpoints };
}

/** A checkpoint as the store recorded it: no per-task stats; a savepoint is always aligned. */
function recordedStats(c: CheckpointMetadata): CheckpointStats {
  return { id: c.id, status: CheckpointStatus.COMPLETED, savepoint: c.savepoint, triggered: c.triggered, completed: c.completed, durationMs: c.completed - c.triggered, bytes: c.bytes, inFlightBytes: 0, alignmentMs: 0, startDelayMs: 0, unaligned: false, path: c.folder, tasks: {} };
}

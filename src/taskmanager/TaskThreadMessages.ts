import type { SerializedError } from '../errors/Errors.js';
import type { TaskEndState } from '../lifecycle/TaskState.js';
import type { SharedSegments } from '../network/buffer/NetworkBufferPool.js';
import type { HandoverRings } from '../network/handover/HandoverLink.js';
import type { Split, TaskCounters, TaskDeploymentDescriptor } from '../rpc/TaskDeployment.js';
import type { ManagedMemorySpec } from '../runtime/memory/ManagedMemory.js';
import type { CheckpointMessage } from './Task.js';
import type { CheckpointAck } from './TaskCheckpoints.js';

/** What every task thread is started with. */
export interface TaskThreadData {
  shared: SharedSegments;
  /** Where the TaskManager stores uploaded job modules; a thread imports them from there. */
  modulesDir: string;
  rings: HandoverRings;
}

/** Control messages to a task thread; buffers travel as handover batches beside them. */
export type ToTaskThread =
  | { type: 'run'; descriptor: TaskDeploymentDescriptor; memory: ManagedMemorySpec }
  | { type: 'cancel' }
  /** Copies of what an unaligned barrier overtook in output partition `partition`, by subpartition: the answer to its PRIORITY_EVENT. */
  | { type: 'overtaken'; partition: number; buffers: Uint8Array[][] }
  /** A checkpoint's trigger (at a source), completion or abort, for the task's mail. */
  | { type: 'checkpoint'; message: CheckpointMessage }
  /** The answer to `collect`: null once the records are delivered, or why they could not be. */
  | { type: 'collected'; error: SerializedError | null }
  /** The answer to `splits`: the next splits of the task's text source (none left: empty), or why there are none. */
  | { type: 'splits'; splits: Split[]; error: SerializedError | null };

/** Control messages from a task thread. */
export type FromTaskThread =
  | { type: 'counters'; counters: TaskCounters }
  /** The records of a collect sink, packed with msgpackr: all of them, or (unbounded) part `part` of them. */
  | { type: 'collect'; records: Uint8Array; part?: number; origin?: number }
  /** Asks for the next splits of the task's text source, which the JobManager hands out. */
  | { type: 'splits' }
  /** The task stored its part of a checkpoint. */
  | { type: 'checkpointAck'; ack: CheckpointAck }
  /** The task could not take part in a checkpoint. */
  | { type: 'checkpointDecline'; checkpointId: number; error: SerializedError }
  /** The task is over, with its coded error unless it finished; `modules` counts the job modules this thread has imported in its life. */
  | { type: 'ended'; state: TaskEndState; error: SerializedError | null; counters: TaskCounters; modules: number };

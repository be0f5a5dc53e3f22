import type { SharedSegments } from '../network/buffer/NetworkBufferPool.js';
import type { HandoverRings } from '../network/thread/HandoverLink.js';
import type { TaskCounters, TaskDeploymentDescriptor } from '../job/TaskDeployment.js';
import type { TextSplit } from '../job/TextSplits.js';
import type { ManagedMemorySpec } from './memory/ManagedMemory.js';

/** What every task thread is started with. */
export interface TaskThreadData {
  shared: SharedSegments;
  /** Where the TaskManager stores uploaded job modules; a thread imports them from there. */
  modulesDir: string;
  rings: HandoverRings;
}

/** A task's end as the thread reports it. */
export type TaskEndState = 'FINISHED' | 'FAILED' | 'CANCELED';

/** Control messages to a task thread; buffers travel as handover batches beside them. */
export type ToTaskThread =
  | { type: 'run'; descriptor: TaskDeploymentDescriptor; memory: ManagedMemorySpec }
  | { type: 'cancel' }
  /** The answer to `collect`: null once the records are delivered, or why they could not be. */
  | { type: 'collected'; error: string | null }
  /** The answer to `splits`: the next splits of the task's text source (none left: empty), or why there are none. */
  | { type: 'splits'; splits: TextSplit[]; error: string | null };

/** Control messages from a task thread. */
export type FromTaskThread =
  | { type: 'counters'; counters: TaskCounters }
  /** The records of a collect sink, packed with msgpackr. */
  | { type: 'collect'; records: Uint8Array }
  /** Asks for the next splits of the task's text source, which the JobManager hands out. */
  | { type: 'splits' }
  /** The task is over; `modules` counts the job modules this thread has imported in its life. */
  | { type: 'ended'; state: TaskEndState; error: string | null; counters: TaskCounters; modules: number };

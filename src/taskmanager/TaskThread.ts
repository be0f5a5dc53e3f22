/**
 * The entry point of a task thread. It runs one task at a time (source, operator
 * chain, record writers and serializers, input gates and deserializers) and is
 * kept for the next one. Buffers come and go by index through the handover with
 * the network thread; control messages travel the same port, in order with them.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pack } from 'msgpackr';
import { deserializeError, serializeError, SpillwayError, type SerializedError } from '../errors/Errors.js';
import { JobLoader } from '../job/JobLoader.js';
import { TaskState, type TaskEndState } from '../lifecycle/TaskState.js';
import { emptyCounters, type TaskCounters, type TaskDeploymentDescriptor } from '../rpc/TaskDeployment.js';
import { SegmentArena } from '../network/buffer/NetworkBufferPool.js';
import { HandoverLink } from '../network/handover/HandoverLink.js';
import { TaskEnd } from '../network/taskThread/TaskEnd.js';
import type { ManagedMemorySpec } from '../runtime/memory/ManagedMemory.js';
import { Task, type CheckpointMessage, type TaskShuffle } from './Task.js';
import type { CheckpointAck } from './TaskCheckpoints.js';
import type { FromTaskThread, TaskThreadData, ToTaskThread } from './TaskThreadMessages.js';

/** How often a running task reports its counters. */
const COUNTERS_INTERVAL_MS = 500;

interface Running {
  end: TaskEnd;
  task: Task | null;
  canceled: boolean;
  /** Who waits for the network thread's answer of each type (one request of a type at a time). */
  asking: Map<Answer['type'], Waiter>;
  /** Checkpoint messages that came before the task was made. */
  early: CheckpointMessage[];
}

/** A request's caller: given the network thread's answer, or failed without one (the task was canceled). */
interface Waiter {
  answer(answer: Answer): void;
  fail(error: Error): void;
}

/** The network thread's answers to a task's requests: each carries why it failed, or null. */
type Answer = Extract<ToTaskThread, { error: SerializedError | null }>;

const port = parentPort!;
const { shared, modulesDir, rings } = workerData as TaskThreadData;
const arena = new SegmentArena(shared);
const loader = new JobLoader(modulesDir, null);
const link = HandoverLink.task(rings);
let running: Running | null = null;
// Entries for a task that has ended (published before its end was known) find no task and are dropped.
link.handler = (entries) => running?.end.handle(entries);

port.on('message', (message: unknown) => {
  // Entries published before this message are read first.
  link.drain();
  const control = message as ToTaskThread;
  if (control.type === 'run') void run(control.descriptor, control.memory);
  else if (control.type === 'cancel') cancel();
  else if (control.type === 'overtaken') running?.end.partition(control.partition).overtaken(control.buffers);
  else if (control.type === 'checkpoint') {
    // A trigger may come while the job's code still loads: it waits for the task.
    if (running?.task) running.task.onCheckpoint(control.message);
    else running?.early.push(control.message);
  }
  else running?.asking.get(control.type)?.answer(control);
});

function cancel(): void {
  if (running === null) return;
  running.canceled = true;
  running.task?.cancel();
  // An answer may be long in coming (the JobManager is unreachable, and the TaskManager retries): the task does not wait for it.
  for (const waiter of running.asking.values()) waiter.fail(canceled());
  running.asking.clear();
}

function send(state: Running, message: FromTaskThread): void {
  state.end.port.post(message);
}

async function run(descriptor: TaskDeploymentDescriptor, memory: ManagedMemorySpec): Promise<void> {
  const outputs = descriptor.outputs.map((out) => ({ id: out.partitionId, numSubpartitions: out.numSubpartitions, compression: out.compression }));
  const state: Running = { end: new TaskEnd(link.port(port), arena, outputs), task: null, canceled: false, asking: new Map(), early: [] };
  running = state;
  const timer = setInterval(() => state.task && send(state, { type: 'counters', counters: state.task.counters }), COUNTERS_INTERVAL_MS);
  let endState: TaskEndState = TaskState.FINISHED;
  let error: SerializedError | null = null;
  try {
    const job = await loader.load(descriptor.job);
    if (state.canceled) throw new SpillwayError('SPW_ERR_TASK_CANCELED', `task ${descriptor.taskId} was canceled`);
    const listener = {
      collected: async (records: unknown[], part?: number, origin?: number) => void (await ask(state, { type: 'collect', records: new Uint8Array(pack(records)), part, origin }, 'collected')),
      nextSplits: async () => (await ask(state, { type: 'splits' }, 'splits')).splits,
      checkpointAcknowledged: (ack: CheckpointAck) => send(state, { type: 'checkpointAck', ack }),
      checkpointDeclined: (checkpointId: number, error: SerializedError) => send(state, { type: 'checkpointDecline', checkpointId, error }),
    };
    state.task = new Task(descriptor, job, shuffleOf(state.end, descriptor), listener, memory);
    for (const message of state.early.splice(0)) state.task.onCheckpoint(message);
    await state.task.run();
  } catch (failure) {
    endState = state.canceled ? TaskState.CANCELED : TaskState.FAILED;
    // What the engine throws carries its code; anything else came from the job's own code.
    error = serializeError(failure, state.canceled ? 'SPW_ERR_TASK_CANCELED' : 'SPW_ERR_USER_CODE');
  } finally {
    clearInterval(timer);
    running = null;
  }
  const counters: TaskCounters = state.task?.counters ?? emptyCounters();
  send(state, { type: 'ended', state: endState, error, counters, modules: loader.importedModules });
  // Whatever this task's leftovers still write (a late recycle) must not reach the next task.
  state.end.port.discard();
}

function shuffleOf(end: TaskEnd, descriptor: TaskDeploymentDescriptor): TaskShuffle {
  return {
    partition: (output) => end.partition(output),
    inputGate: (input) => end.inputGate(input, descriptor.inputs[input].channels.map(({ partitionId, subpartition }) => ({ partitionId, subpartition }))),
  };
}

/** Sends a request to the network thread; resolves with its answer of `type`, or rejects with the error the answer carries, or once the task is canceled. */
function ask<T extends Answer['type']>(state: Running, request: FromTaskThread, type: T): Promise<Extract<Answer, { type: T }>> {
  if (state.canceled) return Promise.reject(canceled());
  return new Promise((resolve, reject) => {
    state.asking.set(type, {
      answer: (answer) => {
        state.asking.delete(type);
        if (answer.error === null) resolve(answer as Extract<Answer, { type: T }>);
        else reject(deserializeError(answer.error));
      },
      fail: reject,
    });
    send(state, request);
  });
}

function canceled(): SpillwayError {
  return new SpillwayError('SPW_ERR_TASK_CANCELED', 'the task was canceled');
}

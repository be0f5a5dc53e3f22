/**
 * The entry point of a task thread. It runs one task at a time (source, operator
 * chain, record writers and serializers, input gates and deserializers) and is
 * kept for the next one. Buffers come and go by index through the handover with
 * the network thread; control messages travel the same port, in order with them.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pack } from 'msgpackr';
import { JobLoader } from '../job/JobLoader.js';
import { emptyCounters, type TaskCounters, type TaskDeploymentDescriptor } from '../job/TaskDeployment.js';
import { SegmentArena } from '../network/buffer/NetworkBufferPool.js';
import { HandoverLink } from '../network/thread/HandoverLink.js';
import { TaskEnd } from '../network/thread/TaskEnd.js';
import type { ManagedMemorySpec } from './memory/ManagedMemory.js';
import { Task, type TaskShuffle } from './Task.js';
import type { FromTaskThread, TaskEndState, TaskThreadData, ToTaskThread } from './TaskThreadMessages.js';

/** How often a running task reports its counters. */
const COUNTERS_INTERVAL_MS = 500;

interface Running {
  end: TaskEnd;
  task: Task | null;
  canceled: boolean;
  /** Who waits for the network thread's answer of each type (one request of a type at a time). */
  asking: Map<Answer['type'], Waiter>;
}

/** A request's caller: given the network thread's answer, or failed without one (the task was canceled). */
interface Waiter {
  answer(answer: Answer): void;
  fail(error: Error): void;
}

/** The network thread's answers to a task's requests: each carries why it failed, or null. */
type Answer = Extract<ToTaskThread, { error: string | null }>;

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
  else running?.asking.get(control.type)?.answer(control);
});

function cancel(): void {
  if (running === null) return;
  running.canceled = true;
  running.task?.cancel();
  // An answer may be long in coming (the JobManager is unreachable, and the TaskManager retries): the task does not wait for it.
  for (const waiter of running.asking.values()) waiter.fail(new Error('the task was canceled'));
  running.asking.clear();
}

function send(state: Running, message: FromTaskThread): void {
  state.end.port.post(message);
}

async function run(descriptor: TaskDeploymentDescriptor, memory: ManagedMemorySpec): Promise<void> {
  const outputs = descriptor.outputs.map((out) => ({ id: out.partitionId, numSubpartitions: out.numSubpartitions, compression: out.compression }));
  const state: Running = { end: new TaskEnd(link.port(port), arena, outputs), task: null, canceled: false, asking: new Map() };
  running = state;
  const timer = setInterval(() => state.task && send(state, { type: 'counters', counters: state.task.counters }), COUNTERS_INTERVAL_MS);
  let endState: TaskEndState = 'FINISHED';
  let error: string | null = null;
  try {
    const job = await loader.load(descriptor.job);
    if (state.canceled) throw new Error(`task ${descriptor.taskId} was canceled`);
    const listener = {
      collected: async (records: unknown[]) => void (await ask(state, { type: 'collect', records: new Uint8Array(pack(records)) }, 'collected')),
      nextSplits: async () => (await ask(state, { type: 'splits' }, 'splits')).splits,
    };
    state.task = new Task(descriptor, job, shuffleOf(state.end, descriptor), listener, memory);
    await state.task.run();
  } catch (failure) {
    endState = state.canceled ? 'CANCELED' : 'FAILED';
    error = failure instanceof Error ? failure.message : String(failure);
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
  if (state.canceled) return Promise.reject(new Error('the task was canceled'));
  return new Promise((resolve, reject) => {
    state.asking.set(type, {
      answer: (answer) => {
        state.asking.delete(type);
        if (answer.error === null) resolve(answer as Extract<Answer, { type: T }>);
        else reject(new Error(answer.error));
      },
      fail: reject,
    });
    send(state, request);
  });
}

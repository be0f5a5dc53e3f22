import { SpillwayError } from '../errors/Errors.js';
import type { KeyFn } from '../job/JobDefinition.js';
import { channelForKey, DEFAULT_MAX_PARALLELISM } from '../network/taskThread/writer/ChannelSelector.js';
import type { TaskRestore } from '../rpc/TaskDeployment.js';
import type { ChannelState } from '../runtime/checkpoint/BarrierHandler.js';
import type { InputInFlight, OutputInFlight } from '../runtime/checkpoint/InFlightData.js';
import { readSnapshot, type TaskSnapshot } from '../runtime/checkpoint/SnapshotFile.js';

/** What one subtask takes back from a checkpoint. */
export interface RestoredState {
  /** The state files it reads: its own at the same parallelism; every old subtask's after a rescale. */
  snapshots: TaskSnapshot[];
  /** Whether a key group is this subtask's now (flink's KeyGroupRange). */
  owns: (keyGroup: number) => boolean;
  /** Its sink's transactions that may not have committed, oldest first. */
  pending: [number, unknown][];
  /** In-flight records an unaligned checkpoint stored, this subtask's now. */
  channels: ChannelState[];
  /** The buffers its barriers overtook at the subtask's inputs, and in its output subpartitions (at the checkpoint's parallelism only). */
  inputs: InputInFlight[];
  outputs: OutputInFlight[];
}

/** How the records of a task's inputs are routed, to share an unaligned checkpoint's in-flight records out anew after a rescale. */
export interface InputRouting {
  /** The key of input `input`'s records, if it is hash-partitioned. */
  key(input: number): KeyFn | undefined;
  /** Whether input `input`'s records come each after its event timestamp. */
  timestamped(input: number): boolean;
}

/**
 * Reads what subtask `subtask` of `parallelism` takes back from a checkpoint. At the
 * parallelism of the checkpoint it is its own file; at another (a rescale) every old
 * subtask's file is read: keyed state by the key groups it owns now, a sink's
 * transactions of the old subtasks it stands for (i mod parallelism), and in-flight
 * records by the key that routes them (or by the old subtask it stands for).
 */
export function restoredState(restore: TaskRestore, subtask: number, parallelism: number, routing: InputRouting, maxParallelism = DEFAULT_MAX_PARALLELISM): RestoredState {
  const owns = (group: number): boolean => Math.floor((group * parallelism) / maxParallelism) === subtask;
  if (restore.parallelism === parallelism) {
    const handle = restore.handles[subtask];
    const snapshots = handle ? [readSnapshot(handle)] : [];
    const own = snapshots[0];
    return { snapshots, owns: () => true, pending: own?.sink ?? [], channels: own?.channels ?? [], inputs: own?.inputs ?? [], outputs: own?.outputs ?? [] };
  }
  const all = restore.handles.map((handle) => (handle ? readSnapshot(handle) : null));
  // Buffers are bytes of one channel's stream: they cannot be shared out by key as records can.
  if (all.some((s) => (s?.outputs?.length ?? 0) > 0 || s?.inputs?.some((i) => i.buffers.length > 0 || i.reader.partial.length > 0)))
    throw new SpillwayError('SPW_ERR_RESTORE', 'an unaligned checkpoint that stored in-flight buffers restores only at its own parallelism: rescale from a savepoint (always aligned) or an aligned checkpoint');
  const snapshots = all.filter((s): s is TaskSnapshot => s !== null);
  const mine = all.flatMap((s, old) => (s !== null && old % parallelism === subtask ? [s] : []));
  const pending = mine.flatMap((s) => s.sink ?? []).sort((a, b) => a[0] - b[0]);
  const channels = snapshots.flatMap((s) => s.channels ?? []).flatMap((state) => rerouted(state, subtask, parallelism, routing, maxParallelism, all.indexOf(snapshotOf(snapshots, state))));
  return { snapshots, owns, pending, channels, inputs: [], outputs: [] };
}

function snapshotOf(snapshots: TaskSnapshot[], state: ChannelState): TaskSnapshot {
  return snapshots.find((s) => s.channels?.includes(state))!;
}

/** The records of one stored channel that are this subtask's after a rescale. */
function rerouted(state: ChannelState, subtask: number, parallelism: number, routing: InputRouting, maxParallelism: number, oldSubtask: number): ChannelState[] {
  const key = routing.key(state.input);
  if (key === undefined) return oldSubtask % parallelism === subtask ? [state] : [];
  const step = routing.timestamped(state.input) ? 2 : 1;
  const records: unknown[] = [];
  for (let i = 0; i < state.records.length; i += step) {
    const record = state.records[i + step - 1];
    if (channelForKey(key(record), parallelism, maxParallelism) !== subtask) continue;
    if (step === 2) records.push(state.records[i]);
    records.push(record);
  }
  return records.length === 0 ? [] : [{ ...state, records }];
}

/** A checkpoint taken at a parallelism the restored stage cannot be shared out from (a source that is not rescalable). */
export function notRescalable(what: string): SpillwayError {
  return new SpillwayError('SPW_ERR_RESTORE', `${what} cannot be restored at another parallelism than its checkpoint's`);
}

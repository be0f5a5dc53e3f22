import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Packr } from 'msgpackr';
import { SpillwayError } from '../../errors/Errors.js';
import type { ChannelState } from './BarrierHandler.js';
import type { InputInFlight, OutputInFlight } from './InFlightData.js';
import type { OperatorSnapshot } from './OperatorState.js';

/** What one task keeps in a checkpoint: a file of its own, msgpack, its checksum in the checkpoint's metadata. */
export interface TaskSnapshot {
  checkpointId: number;
  stage: string;
  subtask: number;
  parallelism: number;
  /** Each stateful operator's state, by owner (its kind and place in the stage). */
  operators: Record<string, OperatorSnapshot>;
  /** A source's position: its held splits, or its place in its own input. */
  source?: unknown;
  /** A sink's transactions not known to be committed, oldest first: [checkpointId, transaction]. */
  sink?: [number, unknown][];
  /** An unaligned checkpoint's records of channels read after the snapshot and before their barrier. */
  channels?: ChannelState[];
  /** An unaligned checkpoint's buffers its barriers overtook at this task's input channels, and the channels' readers then. */
  inputs?: InputInFlight[];
  /** An unaligned checkpoint's buffers its barrier overtook in this task's output subpartitions. */
  outputs?: OutputInFlight[];
}

/** Where a task's state file is, what it holds and its sha256: what its acknowledgement tells the JobManager. */
export interface SnapshotHandle {
  path: string;
  bytes: number;
  checksum: string;
}

/** A checkpoint's folder: `<dir>/<jobId>/chk-<id>` (a savepoint's is the one its user gave). */
export function checkpointFolder(dir: string, jobId: string, id: number): string {
  return path.join(dir, jobId, `chk-${id}`);
}

// Maps, Dates and binary values as they are; no shared structures, so a file reads on its own.
const packr = new Packr({ useRecords: false, moreTypes: true });

/** Writes a task's snapshot (packed now, written asynchronously: the task goes on meanwhile) and flushes it to disk. */
export async function writeSnapshot(folder: string, snapshot: TaskSnapshot): Promise<SnapshotHandle> {
  const bytes = packr.pack(snapshot);
  const file = path.join(folder, `${snapshot.stage}-${snapshot.subtask}.state`);
  try {
    await fs.promises.mkdir(folder, { recursive: true });
    const handle = await fs.promises.open(file, 'w');
    try {
      await handle.write(bytes);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new SpillwayError('SPW_ERR_CHECKPOINT_IO', `a checkpoint's state file ${file} could not be written: ${(error as Error).message}`, { cause: error });
  }
  return { path: file, bytes: bytes.length, checksum: sha256(bytes) };
}

/** Reads a task's snapshot back; SPW_ERR_CHECKPOINT_CORRUPT if it is missing or is not what its checksum says. */
export function readSnapshot(handle: SnapshotHandle): TaskSnapshot {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(handle.path);
  } catch (error) {
    throw new SpillwayError('SPW_ERR_CHECKPOINT_CORRUPT', `the state file ${handle.path} of a checkpoint cannot be read: ${(error as Error).message}`, { cause: error });
  }
  if (sha256(bytes) !== handle.checksum) throw new SpillwayError('SPW_ERR_CHECKPOINT_CORRUPT', `the state file ${handle.path} of a checkpoint is damaged: its checksum is not the one recorded`);
  return packr.unpack(bytes) as TaskSnapshot;
}

export function sha256(bytes: Uint8Array): string {
  return crypto.createHash('sha256').update(bytes).digest('hex');
}

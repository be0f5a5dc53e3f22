import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { CheckpointMetadata } from '../jobmanager/checkpoint/CheckpointMetadata.js';
import type { CheckpointPointer, HaServices, StoredJob } from './HaServices.js';
import { log } from '../Logger.js';

/** The checksum the HA store keeps of a checkpoint's `_metadata`: sha256 of the file, hex. */
export function metadataChecksum(folder: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(path.join(folder, '_metadata'))).digest('hex');
}

/** A completed checkpoint as the HA store points at it. */
export function pointerOf(metadata: CheckpointMetadata): CheckpointPointer {
  return { jobId: metadata.jobId, id: metadata.id, folder: metadata.folder, checksum: metadataChecksum(metadata.folder), savepoint: metadata.savepoint };
}

/**
 * The latest recorded checkpoint of a job whose `_metadata` is still there with the
 * checksum recorded; an older one if the latest is gone or damaged (the job's tasks
 * then check each state file as they restore).
 */
export async function latestCheckpoint(ha: HaServices, jobId: string): Promise<CheckpointPointer | undefined> {
  const recorded = await ha.checkpoints(jobId);
  for (const pointer of recorded.reverse()) {
    try {
      if (metadataChecksum(pointer.folder) === pointer.checksum) return pointer;
    } catch {
      // Its folder is gone (removed past retention while the record stayed): an older one is tried.
    }
    log.warn({ job: jobId, checkpoint: pointer.id }, `checkpoint ${pointer.id} at ${pointer.folder} is missing or damaged: an older one is tried`);
  }
  return undefined;
}

/**
 * A stored job's POST /jobs body as a new leader submits it again: from its latest
 * intact checkpoint if it has one (its sinks' transactions go on from there, exactly
 * once); a bounded job without checkpoints runs from its start.
 */
export async function resumedBody(ha: HaServices, job: StoredJob): Promise<Record<string, unknown>> {
  const latest = await latestCheckpoint(ha, job.id);
  return latest === undefined ? { ...job.body } : { ...job.body, savepoint: latest.folder };
}

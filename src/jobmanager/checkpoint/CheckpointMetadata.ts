import fs from 'node:fs';
import path from 'node:path';
import type { AssignerSnapshot } from '../../connectors/SplitAssigner.js';
import { SpillwayError } from '../../errors/Errors.js';
import type { StageDefinition } from '../../job/JobDefinition.js';
import { DEFAULT_MAX_PARALLELISM } from '../../network/taskThread/writer/ChannelSelector.js';
import type { SnapshotHandle } from '../../runtime/checkpoint/SnapshotFile.js';
import { sha256 } from '../../runtime/checkpoint/SnapshotFile.js';

/** What a completed checkpoint is: written as `_metadata` (JSON) in its folder, and recorded in the JobManager's store. */
export interface CheckpointMetadata {
  id: number;
  jobId: string;
  /** When it was triggered and completed, epoch ms. */
  triggered: number;
  completed: number;
  savepoint: boolean;
  /** Its folder. */
  folder: string;
  fingerprint: TopologyFingerprint;
  /** Each stage's parallelism then. */
  parallelism: Record<string, number>;
  /** Each task's state file, by stage and subtask. */
  tasks: Record<string, (SnapshotHandle | null)[]>;
  /** Each split source's assignment then, and what its subtasks held. */
  sources: Record<string, { assigner: AssignerSnapshot; held: { subtask: number; splits: unknown[]; received: number }[] }>;
  /** Bytes of every task's state. */
  bytes: number;
}

/** What a job's topology is, for a savepoint: its stages, their operators' kinds and names, and the key groups. */
export interface TopologyFingerprint {
  maxParallelism: number;
  stages: { name: string; source?: string; sink?: string; operators: string[]; inputs: string[] }[];
}

export function fingerprintOf(stages: readonly StageDefinition[]): TopologyFingerprint {
  return {
    maxParallelism: DEFAULT_MAX_PARALLELISM,
    stages: stages.map((stage) => ({
      name: stage.name,
      source: stage.source?.kind,
      sink: stage.sink?.kind,
      operators: (stage.operators ?? []).map((op) => op.kind),
      inputs: (stage.inputs ?? []).map((input) => `${input.from}:${input.partitioning.type}`),
    })),
  };
}

/** What differs between the topology a savepoint was taken of and a job's: one sentence each; empty if nothing. */
export function fingerprintChanges(saved: TopologyFingerprint, now: TopologyFingerprint): string[] {
  const changes: string[] = [];
  if (saved.maxParallelism !== now.maxParallelism) changes.push(`the key groups were ${saved.maxParallelism} and are ${now.maxParallelism}`);
  const byName = new Map(now.stages.map((s) => [s.name, s]));
  for (const stage of saved.stages) {
    const current = byName.get(stage.name);
    if (current === undefined) {
      changes.push(`stage "${stage.name}" is gone`);
      continue;
    }
    const was = JSON.stringify(stage);
    if (was !== JSON.stringify(current)) changes.push(`stage "${stage.name}" was ${describe(stage)} and is ${describe(current)}`);
  }
  for (const stage of now.stages) if (!saved.stages.some((s) => s.name === stage.name)) changes.push(`stage "${stage.name}" is new`);
  return changes;
}

function describe(stage: TopologyFingerprint['stages'][number]): string {
  const parts = [stage.source && `a ${stage.source} source`, ...stage.inputs.map((i) => `reading ${i}`), stage.operators.length > 0 && `operators ${stage.operators.join(', ')}`, stage.sink && `a ${stage.sink} sink`];
  return parts.filter(Boolean).join(' with ');
}

/** Writes a checkpoint's `_metadata`, flushed to disk before the checkpoint counts as complete. */
export function writeMetadata(metadata: CheckpointMetadata): void {
  const file = path.join(metadata.folder, '_metadata');
  const text = JSON.stringify(metadata);
  try {
    fs.mkdirSync(metadata.folder, { recursive: true });
    const fd = fs.openSync(file, 'w');
    try {
      fs.writeSync(fd, JSON.stringify({ checksum: sha256(Buffer.from(text)), metadata: JSON.parse(text) as unknown }));
      fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch (error) {
    throw new SpillwayError('SPW_ERR_CHECKPOINT_IO', `the checkpoint's metadata ${file} could not be written: ${(error as Error).message}`, { cause: error });
  }
}

/** Reads a checkpoint's or savepoint's `_metadata` from its folder; SPW_ERR_CHECKPOINT_CORRUPT if it is missing or damaged. */
export function readMetadata(folder: string): CheckpointMetadata {
  const file = path.join(folder, '_metadata');
  let parsed: { checksum?: string; metadata?: CheckpointMetadata };
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof parsed;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new SpillwayError(missing ? 'SPW_ERR_SAVEPOINT_NOT_FOUND' : 'SPW_ERR_CHECKPOINT_CORRUPT', `no readable checkpoint metadata at ${file}: ${(error as Error).message}`, { cause: error });
  }
  if (parsed.metadata === undefined || parsed.checksum !== sha256(Buffer.from(JSON.stringify(parsed.metadata)))) {
    throw new SpillwayError('SPW_ERR_CHECKPOINT_CORRUPT', `the checkpoint metadata ${file} is damaged: its checksum is not the one recorded`);
  }
  return parsed.metadata;
}

/** Whether every state file a checkpoint names is there with the checksum it recorded (read in full: a restore would). */
export function checkpointIntact(metadata: CheckpointMetadata): string | undefined {
  for (const handles of Object.values(metadata.tasks)) {
    for (const handle of handles) {
      if (handle === null) continue;
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(handle.path);
      } catch {
        return `its state file ${handle.path} is missing`;
      }
      if (sha256(bytes) !== handle.checksum) return `its state file ${handle.path} is damaged`;
    }
  }
  return undefined;
}


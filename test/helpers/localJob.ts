import { SpillwayError } from '../../src/errors/Errors.js';
import { sourceSpec } from '../../src/connectors/Sources.js';
import type { HeldSplits } from '../../src/connectors/SourceSpec.js';
import { SplitAssigner, type AssignerSnapshot } from '../../src/connectors/SplitAssigner.js';
import type { JobDefinition, StageDefinition } from '../../src/job/JobDefinition.js';
import { validateJob } from '../../src/job/JobValidation.js';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import type { CheckpointAck, OutputDescriptor, TaskDeploymentDescriptor, TaskRestore } from '../../src/rpc/TaskDeployment.js';
import { Task } from '../../src/taskmanager/Task.js';
import { KiB, localGate } from './plane.js';

export interface LocalJobOptions {
  parallelism: number;
  /** Checkpoints: where their state goes and how they align; `checkpoint` on the job takes one. */
  checkpoints?: { directory: string; alignmentTimeout?: number };
  /** Restoring from a checkpoint this harness took (LocalCheckpoint), as a JobManager would. */
  restore?: LocalCheckpoint;
  /** Segment size of the job's buffers (small ones make records span buffers). */
  segmentSize?: number;
  bufferTimeout?: number;
  /** For an unbounded job: resolves when the test has seen enough; every task is then canceled. */
  until?: Promise<unknown>;
  /**
   * Where collect sinks' numbered parts go, as the JobManager keeps them across a job's
   * attempts: a part sent again (a restored sink committing what its checkpoint had
   * pending) replaces itself. Pass one to two runs of a job, the second restored from the first.
   */
  parts?: CollectedParts;
}

/** Collected parts by stage, then `origin:part`: the JobManager's store of a job's results, in small. */
export type CollectedParts = Map<string, Map<string, unknown[]>>;

/** Every record of a stage's parts, in no particular order. */
export function partsOf(parts: CollectedParts, stage: string): unknown[] {
  return [...(parts.get(stage)?.values() ?? [])].flat();
}

export interface LocalJobRun {
  /** What each collect sink's subtask collected, by stage name, in subtask order. */
  collected: Map<string, unknown[][]>;
  tasks: Task[];
}

/** A checkpoint a local job took: every task's acknowledgement, and its sources' split assignment then. */
export interface LocalCheckpoint {
  id: number;
  acks: Map<string, CheckpointAck>;
  assigners: Map<string, AssignerSnapshot>;
  /** Each stage's parallelism then. */
  parallelism: Map<string, number>;
}

/** A job started in this process: its tasks, what it collects, and its checkpoints. */
export interface LocalJob extends LocalJobRun {
  /** Resolves once every task ended (rejects with the first failure but a cancel). */
  done: Promise<void>;
  /**
   * Takes checkpoint `id` (unaligned if asked): triggered at the sources, resolved with
   * every task's acknowledgement once all came (then every task is told it completed),
   * rejected if a task declines it, or after CHECKPOINT_TIMEOUT_MS unless `sourcesRunning`
   * (asked from inside the job, a trigger cannot be lost).
   */
  checkpoint(id: number, options?: { unaligned?: boolean; stop?: boolean; sourcesRunning?: boolean }): Promise<LocalCheckpoint>;
  cancel(): void;
}

/**
 * Runs a job in this process, every subtask a Task as a TaskManager runs it, joined by
 * real pipelined partitions, local input channels and record (de)serializers: the
 * engine's data plane and operator runtime without a cluster. An unbounded job runs
 * until `until` resolves, then its tasks are canceled.
 */
export async function runLocalJob(job: JobDefinition, options: LocalJobOptions): Promise<LocalJobRun> {
  const run = startLocalJob(job, options);
  if (options.until !== undefined) {
    await options.until;
    run.cancel();
  }
  await run.done;
  return run;
}

/** How long a local checkpoint may take before it is aborted, as a job's checkpoint `timeout`. */
const CHECKPOINT_TIMEOUT_MS = 5000;

/** Starts a job in this process (see runLocalJob). */
export function startLocalJob(job: JobDefinition, options: LocalJobOptions): LocalJob {
  const { parallelism } = options;
  const stages = validateJob(job, parallelism);
  const segmentSize = options.segmentSize ?? 32 * KiB;
  const global = new NetworkBufferPool({ totalBytes: 4096 * segmentSize, segmentSize });
  const manager = new ResultPartitionManager();
  const width = (stage: StageDefinition): number => stage.parallelism ?? parallelism;
  const consumersOf = (name: string): { stage: StageDefinition; input: number }[] =>
    stages.flatMap((stage) => (stage.inputs ?? []).flatMap((input, i) => (input.from === name ? [{ stage, input: i }] : [])));
  const partitionId = (stage: string, subtask: number, consumer: string, input: number): string => `${stage}#${subtask}->${consumer}.${input}`;
  const collected = new Map<string, unknown[][]>();
  // Made at a stage's first ask, as the JobManager makes them; asks meanwhile wait for the same one.
  const making = new Map<string, Promise<SplitAssigner<unknown>>>();
  /** The assigners made, which a checkpoint snapshots. */
  const assigners = new Map<string, SplitAssigner<unknown>>();
  const tasks: Task[] = [];
  const acks = new Map<number, { acks: Map<string, CheckpointAck>; resolve: (acks: Map<string, CheckpointAck>) => void; reject: (error: Error) => void }>();
  const sources: Task[] = [];
  for (const stage of stages) {
    if (stage.sink?.kind === 'collect') collected.set(stage.name, Array.from({ length: width(stage) }, () => []));
    for (let subtask = 0; subtask < width(stage); subtask++) {
      const outputs: OutputDescriptor[] = consumersOf(stage.name).map(({ stage: consumer, input }) => ({
        partitionId: partitionId(stage.name, subtask, consumer.name, input),
        consumerStage: consumer.name,
        consumerInput: input,
        numSubpartitions: consumer.inputs![input].partitioning.type === 'forward' ? 1 : width(consumer),
        type: 'pipelined',
        compression: null,
      }));
      const partitions = outputs.map((out) => {
        const partition = new ResultPartition({ id: out.partitionId, type: 'pipelined', numSubpartitions: out.numSubpartitions, pool: new BufferPool(global, 2, 64, out.partitionId) });
        manager.register(partition);
        return partition;
      });
      const descriptor: TaskDeploymentDescriptor = {
        jobId: 'local',
        taskId: `${stage.name}#${subtask}`,
        attempt: 0,
        stage: stage.name,
        subtask,
        parallelism: width(stage),
        jobParallelism: parallelism,
        job: { params: {} },
        inputs: [],
        outputs,
        bufferTimeout: options.bufferTimeout ?? 10,
        checkpoints: options.checkpoints,
        restore: restoreOf(options.restore, stage.name),
      };
      let request = 0;
      const task = new Task(
        descriptor,
        job,
        {
          partition: (index) => partitions[index],
          inputGate: (g) => {
            const input = stage.inputs![g];
            const producers = stages.find((s) => s.name === input.from)!;
            const forward = input.partitioning.type === 'forward';
            const ids = forward ? [partitionId(input.from, subtask, stage.name, g)] : Array.from({ length: width(producers) }, (_, p) => partitionId(input.from, p, stage.name, g));
            return localGate(manager, ids, forward ? 0 : subtask);
          },
        },
        {
          collected: async (records, part, origin) => {
            collected.get(stage.name)![subtask].push(...records);
            if (options.parts === undefined || part === undefined) return;
            const stored = options.parts.get(stage.name) ?? new Map<string, unknown[]>();
            options.parts.set(stage.name, stored.set(`${origin ?? subtask}:${part}`, records));
          },
          nextSplits: async () => {
            const asked = request++;
            let made = making.get(stage.name);
            if (made === undefined) {
              made = Promise.resolve(sourceSpec(stage.source!).splits!(stage.source!, width(stage))).then((supply) => {
                const assigner = new SplitAssigner(supply);
                const snapshot = options.restore?.assigners.get(stage.name);
                if (snapshot) assigner.restore(snapshot, heldOf(options.restore!, stage.name));
                assigners.set(stage.name, assigner);
                return assigner;
              });
              making.set(stage.name, made);
            }
            const assigner = await made;
            if (assigner.isHeld(subtask)) await assigner.whenReleased(subtask);
            return assigner.next(subtask, 0, asked);
          },
          checkpointAcknowledged: (ack) => {
            const waiting = acks.get(ack.checkpointId);
            if (waiting === undefined) return;
            waiting.acks.set(descriptor.taskId, ack);
            assigners.get(stage.name)?.release(subtask);
            if (waiting.acks.size === tasks.length) waiting.resolve(waiting.acks);
          },
          checkpointDeclined: (id, error) => acks.get(id)?.reject(Object.assign(new Error(error.message), { code: error.code })),
        },
      );
      tasks.push(task);
      if (stage.source) sources.push(task);
    }
  }
  const runs = tasks.map((task) => task.run());
  const done = Promise.allSettled(runs).then((ended) => {
    // Canceled is how an unbounded job ends; anything else is a failure of the test's job.
    const failed = ended.find((r): r is PromiseRejectedResult => r.status === 'rejected' && !['SPW_ERR_TASK_CANCELED', 'SPW_ERR_PARTITION_RELEASED'].includes((r.reason as { code?: string }).code ?? ''));
    if (failed !== undefined) throw failed.reason;
  });
  done.catch(() => undefined);
  return {
    collected,
    tasks,
    done,
    cancel: () => {
      for (const task of tasks) task.cancel();
    },
    checkpoint: async (id, { unaligned = false, stop = false, sourcesRunning = false } = {}) => {
      const taken = new Promise<Map<string, CheckpointAck>>((resolve, reject) => acks.set(id, { acks: new Map(), resolve, reject }));
      const snapshots = new Map([...assigners].map(([stage, assigner]) => [stage, assigner.snapshotAndHold(width(stages.find((s) => s.name === stage)!))]));
      const barrier = { id, timestamp: Date.now(), unaligned, savepoint: stop, stop };
      for (const task of sources) task.onCheckpoint({ type: 'trigger', barrier });
      // As the coordinator's timeout: a trigger that reached a source before it ran is lost, and its checkpoint aborted.
      // One asked while the sources are known to run (`sourcesRunning`) cannot be lost: it waits for its acks however loaded the machine.
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        if (sourcesRunning) return;
        timer = setTimeout(() => reject(new SpillwayError('SPW_ERR_CHECKPOINT_FAILED', `checkpoint ${id} did not complete within ${CHECKPOINT_TIMEOUT_MS} ms`)), CHECKPOINT_TIMEOUT_MS);
      });
      const all = await Promise.race([taken, expired]).catch((error: unknown) => {
        for (const task of tasks) task.onCheckpoint({ type: 'abort', id });
        for (const assigner of assigners.values()) assigner.release();
        throw error;
      }).finally(() => clearTimeout(timer));
      for (const task of tasks) task.onCheckpoint({ type: 'complete', id });
      return { id, acks: all, assigners: snapshots, parallelism: new Map(stages.map((s) => [s.name, width(s)])) };
    },
  };
}

/** A stage's restore from a local checkpoint: its tasks' state files by subtask. */
function restoreOf(checkpoint: LocalCheckpoint | undefined, stage: string): TaskRestore | undefined {
  if (checkpoint === undefined) return undefined;
  const parallelism = checkpoint.parallelism.get(stage)!;
  const handles = Array.from({ length: parallelism }, (_, subtask) => checkpoint.acks.get(`${stage}#${subtask}`)?.handle ?? null);
  return { checkpointId: checkpoint.id, parallelism, handles };
}

/** What a stage's source readers held at a local checkpoint. */
function heldOf(checkpoint: LocalCheckpoint, stage: string): { subtask: number; splits: unknown[]; received: number }[] {
  return Array.from({ length: checkpoint.parallelism.get(stage)! }, (_, subtask) => ({ subtask, ...((checkpoint.acks.get(`${stage}#${subtask}`)?.sourcePosition as HeldSplits | undefined) ?? { splits: [], received: 0 }) }));
}

import { validateJob, type JobDefinition, type StageDefinition } from '../job/JobDefinition.js';
import { emptyCounters, type JobReference, type TaskCounters, type TaskDeploymentDescriptor, type TaskState } from '../job/TaskDeployment.js';
import type { PartitionType } from '../network/partition/PartitionType.js';
import { partitionType } from '../network/partition/PartitionTypes.js';
import type { TaskBufferStats } from '../network/thread/NetworkEnd.js';
import type { PartitionTracker } from './PartitionTracker.js';
import type { CounterSample, TaskRates } from './TaskRates.js';
import type { TaskManagerInfo } from './TaskManagerRegistry.js';

/** One subtask of a stage, placed on a TaskManager. */
export interface ExecutionVertex {
  taskId: string;
  stage: string;
  subtask: number;
  parallelism: number;
  taskManagerId: string;
  state: TaskState | 'CREATED';
  error?: string;
  counters: TaskCounters;
  /** The last report of a running task, its rates since the one before, and where its buffers are now. */
  sample?: CounterSample;
  rates?: TaskRates;
  buffers?: TaskBufferStats;
}

/** An exchange between two stages: one partition per producer subtask. */
export interface ExecutionEdge {
  index: number;
  from: string;
  to: string;
  /** Which input of the consuming stage. */
  input: number;
  type: PartitionType;
  /** Its buffers are compressed: asked for (on the input or the job) and allowed by its type. */
  compression: boolean;
  /** Forward: producer subtask i feeds consumer subtask i alone, through a partition of one subpartition. */
  pointwise: boolean;
}

/** instance i of n on worker floor(i*w/n): contiguous blocks, the same on every run. */
export function ownerOf(instance: number, n: number, workers: number): number {
  return Math.floor((instance * workers) / n);
}

/**
 * A validated job expanded to subtasks, partitions and channels, with slot sharing
 * (subtask i of every stage shares slot i) and deterministic placement of slot i
 * on TaskManager floor(i*w/p), so forward edges stay local.
 */
export class ExecutionGraph {
  readonly stages: StageDefinition[];
  readonly edges: ExecutionEdge[] = [];
  readonly vertices = new Map<string, ExecutionVertex>();
  /** Stages connected by edges that are pipelined and cannot be read again: deployed (and restarted) together; in topological order. */
  readonly regions: string[][];
  /** Slots each TaskManager gives this job: the TaskManagers it runs on, and nothing else. */
  readonly slots = new Map<string, number>();

  constructor(
    readonly jobId: string,
    readonly definition: JobDefinition,
    readonly parallelism: number,
    exchange: PartitionType,
    compression: boolean,
    readonly job: JobReference,
    taskManagers: TaskManagerInfo[],
    readonly bufferTimeout: number,
  ) {
    this.stages = validateJob(definition, parallelism);
    for (const stage of this.stages) {
      const probeBlocking = this.probeMustBlock(stage);
      (stage.inputs ?? []).forEach((input, i) => {
        let type = input.exchange === undefined ? exchange : partitionType(input.exchange);
        if (i === 1 && probeBlocking && bindsRegion(type)) type = partitionType('blocking');
        const pointwise = input.partitioning.type === 'forward';
        const compressed = type.isCompressible && (input.compression ?? compression);
        this.edges.push({ index: this.edges.length, from: input.from, to: stage.name, input: i, type, compression: compressed, pointwise });
      });
      const p = this.stageParallelism(stage.name);
      for (let subtask = 0; subtask < p; subtask++) {
        const taskId = `${jobId}.${stage.name}.${subtask}`;
        const taskManagerId = taskManagers[ownerOf(subtask, parallelism, taskManagers.length)].id;
        const counters = emptyCounters();
        this.vertices.set(taskId, { taskId, stage: stage.name, subtask, parallelism: p, taskManagerId, state: 'CREATED', counters });
      }
    }
    this.regions = this.pipelinedRegions();
    for (let slot = 0; slot < parallelism; slot++) {
      const id = taskManagers[ownerOf(slot, parallelism, taskManagers.length)].id;
      this.slots.set(id, (this.slots.get(id) ?? 0) + 1);
    }
  }

  stageParallelism(stage: string): number {
    return this.stages.find((s) => s.name === stage)!.parallelism ?? this.parallelism;
  }

  verticesOf(stage: string): ExecutionVertex[] {
    return [...this.vertices.values()].filter((v) => v.stage === stage);
  }

  partitionId(edge: ExecutionEdge, producerSubtask: number): string {
    return `${this.jobId}/${edge.index}/${producerSubtask}`;
  }

  /** Registers every partition with the tracker: producer, consumers and where it will live. */
  trackPartitions(tracker: PartitionTracker): void {
    for (const edge of this.edges) {
      const consumers = this.verticesOf(edge.to).map((v) => v.taskId);
      for (const producer of this.verticesOf(edge.from)) {
        tracker.track({
          id: this.partitionId(edge, producer.subtask),
          jobId: this.jobId,
          type: edge.type,
          producerTask: producer.taskId,
          consumerTasks: edge.pointwise ? [consumers[producer.subtask]] : consumers,
        });
      }
    }
  }

  /**
   * A region may start once every partition it reads from outside is announced: a
   * pipelined one (hybrid) at its first buffer, any other once finished.
   */
  isDeployable(region: string[], tracker: PartitionTracker): boolean {
    return this.edges
      .filter((e) => region.includes(e.to) && !region.includes(e.from))
      .every((e) => this.verticesOf(e.from).every((v) => tracker.get(this.partitionId(e, v.subtask))?.ready === true));
  }

  descriptor(vertex: ExecutionVertex, tracker: PartitionTracker): TaskDeploymentDescriptor {
    const inputs = this.edges
      .filter((e) => e.to === vertex.stage)
      .sort((a, b) => a.input - b.input)
      .map((edge) => ({
        exchange: edge.type.name,
        channels: this.verticesOf(edge.from)
          .filter((producer) => !edge.pointwise || producer.subtask === vertex.subtask)
          .map((producer) => {
            const partitionId = this.partitionId(edge, producer.subtask);
            const subpartition = edge.pointwise ? 0 : vertex.subtask;
            return { partitionId, subpartition, location: tracker.get(partitionId)?.location ?? null };
          }),
      }));
    const outputs = this.edges
      .filter((e) => e.from === vertex.stage)
      .map((edge) => ({
        partitionId: this.partitionId(edge, vertex.subtask),
        consumerStage: edge.to,
        consumerInput: edge.input,
        numSubpartitions: edge.pointwise ? 1 : this.stageParallelism(edge.to),
        type: edge.type.name,
        compression: edge.compression,
      }));
    return {
      jobId: this.jobId,
      taskId: vertex.taskId,
      stage: vertex.stage,
      subtask: vertex.subtask,
      parallelism: vertex.parallelism,
      jobParallelism: this.parallelism,
      job: this.job,
      inputs,
      outputs,
      bufferTimeout: this.bufferTimeout,
    };
  }

  /**
   * A join reads its build input to the end before its probe input. If both descend
   * from one stage, a pipelined probe input would stall that stage, and through it
   * the build input: a probe side whose type is pipelined is then made blocking (it
   * goes to memory or disk).
   */
  private probeMustBlock(stage: StageDefinition): boolean {
    const inputs = stage.inputs ?? [];
    if (inputs.length !== 2) return false;
    const ancestors = (name: string, seen = new Set<string>()): Set<string> => {
      seen.add(name);
      for (const input of this.stages.find((s) => s.name === name)!.inputs ?? []) ancestors(input.from, seen);
      return seen;
    };
    const build = ancestors(inputs[0].from);
    return [...ancestors(inputs[1].from)].some((name) => build.has(name));
  }

  private pipelinedRegions(): string[][] {
    const parent = new Map(this.stages.map((s) => [s.name, s.name]));
    const find = (x: string): string => (parent.get(x) === x ? x : find(parent.get(x)!));
    for (const edge of this.edges) if (bindsRegion(edge.type)) parent.set(find(edge.from), find(edge.to));
    const regions = new Map<string, string[]>();
    for (const stage of this.stages) {
      const root = find(stage.name);
      regions.set(root, [...(regions.get(root) ?? []), stage.name]);
    }
    return [...regions.values()];
  }
}

/**
 * Producer and consumer of an edge belong to one pipelined region when its partition
 * is consumed while produced and cannot be read again: neither can run (or restart)
 * without the other. A re-readable partition (blocking, sort-merge, hybrid) is a
 * region boundary.
 */
export function bindsRegion(type: PartitionType): boolean {
  return type.isPipelined && !type.isReReadable;
}

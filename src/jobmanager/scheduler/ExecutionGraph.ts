import { validateJob, type JobDefinition, type StageDefinition } from '../../job/JobDefinition.js';
import type { JobReference, TaskDeploymentDescriptor } from '../../rpc/TaskDeployment.js';
import type { PartitionType } from '../../network/partition/PartitionType.js';
import { type CompressionCodec, compressionCodec } from '../../network/buffer/CompressionCodec.js';
import { partitionType } from '../../network/partition/PartitionTypes.js';
import type { PartitionTracker } from './PartitionTracker.js';
import { ExecutionVertex } from './ExecutionVertex.js';
import { pipelinedRegions } from './PipelinedRegions.js';
import type { TaskManagerInfo } from '../cluster/TaskManagerRegistry.js';

/** An exchange between two stages: one partition per producer subtask. */
export interface ExecutionEdge {
  index: number;
  from: string;
  to: string;
  /** Which input of the consuming stage. */
  input: number;
  type: PartitionType;
  /** The codec of its buffers: asked for (on the input or the job) and allowed by its type; null: none. */
  compression: CompressionCodec | null;
  /** Forward: producer subtask i feeds consumer subtask i alone, through a partition of one subpartition. */
  pointwise: boolean;
}

/** One producer subtask feeding one consumer subtask over an edge: what regions are drawn from. */
export interface VertexLink {
  from: string;
  to: string;
  type: PartitionType;
  edge: ExecutionEdge;
  producerSubtask: number;
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
  readonly links: VertexLink[] = [];
  /** Pipelined regions of subtasks (task ids), deployed and restarted together; in topological order. */
  readonly regions: string[][];
  /** Per region, the links that enter it from another: the partitions it reads. */
  readonly regionInputs: VertexLink[][];
  private readonly regionIndex = new Map<string, number>();
  /** The TaskManager of each of the job's slots: subtask i of every stage runs in slot i. */
  readonly slotOwners: string[] = [];

  constructor(
    readonly jobId: string,
    readonly definition: JobDefinition,
    readonly parallelism: number,
    exchange: PartitionType,
    compression: CompressionCodec | null,
    readonly job: JobReference,
    taskManagers: TaskManagerInfo[],
    readonly bufferTimeout: number,
  ) {
    this.stages = validateJob(definition, parallelism);
    for (const stage of this.stages) {
      const probeBlocking = this.probeMustBlock(stage);
      (stage.inputs ?? []).forEach((input, i) => {
        let type = input.exchange === undefined ? exchange : partitionType(input.exchange);
        if (i === 1 && probeBlocking && type.isPipelined && !type.isReReadable) type = partitionType('blocking');
        const pointwise = input.partitioning.type === 'forward';
        const asked = input.compression === undefined ? compression : compressionCodec(input.compression);
        const compressed = type.isCompressible ? asked : null;
        this.edges.push({ index: this.edges.length, from: input.from, to: stage.name, input: i, type, compression: compressed, pointwise });
      });
      const p = this.stageParallelism(stage.name);
      for (let subtask = 0; subtask < p; subtask++) {
        const taskId = `${jobId}.${stage.name}.${subtask}`;
        const taskManagerId = taskManagers[ownerOf(subtask, parallelism, taskManagers.length)].id;
        this.vertices.set(taskId, new ExecutionVertex(taskId, stage.name, subtask, p, taskManagerId));
      }
    }
    for (const edge of this.edges) {
      const consumers = this.verticesOf(edge.to);
      for (const producer of this.verticesOf(edge.from)) {
        for (const c of edge.pointwise ? [consumers[producer.subtask]] : consumers) {
          this.links.push({ from: producer.taskId, to: c.taskId, type: edge.type, edge, producerSubtask: producer.subtask });
        }
      }
    }
    this.regions = pipelinedRegions([...this.vertices.keys()], this.links);
    this.regions.forEach((region, r) => region.forEach((taskId) => this.regionIndex.set(taskId, r)));
    this.regionInputs = this.regions.map(() => []);
    for (const link of this.links) {
      const consumer = this.regionOf(link.to);
      if (this.regionOf(link.from) !== consumer) this.regionInputs[consumer].push(link);
    }
    for (let slot = 0; slot < parallelism; slot++) this.slotOwners.push(taskManagers[ownerOf(slot, parallelism, taskManagers.length)].id);
  }

  /** Slots each TaskManager gives this job: the TaskManagers it runs on, and nothing else. */
  get slots(): Map<string, number> {
    const slots = new Map<string, number>();
    for (const id of this.slotOwners) slots.set(id, (slots.get(id) ?? 0) + 1);
    return slots;
  }

  /** Moves a slot (and every subtask in it) to another TaskManager. */
  moveSlot(slot: number, taskManagerId: string): void {
    this.slotOwners[slot] = taskManagerId;
    for (const vertex of this.vertices.values()) if (vertex.subtask === slot) vertex.taskManagerId = taskManagerId;
  }

  /** The index in `regions` of a subtask's region. */
  regionOf(taskId: string): number {
    return this.regionIndex.get(taskId)!;
  }

  regionVertices(region: number): ExecutionVertex[] {
    return this.regions[region].map((taskId) => this.vertices.get(taskId)!);
  }

  /** The partition a link reads, of its producer's current attempt. */
  linkPartition(link: VertexLink): string {
    return this.partitionId(link.edge, link.producerSubtask);
  }

  stageParallelism(stage: string): number {
    return this.stages.find((s) => s.name === stage)!.parallelism ?? this.parallelism;
  }

  verticesOf(stage: string): ExecutionVertex[] {
    return [...this.vertices.values()].filter((v) => v.stage === stage);
  }

  /** The partition of the producer's current attempt: a restarted producer makes a new one, never confused with the old. */
  partitionId(edge: ExecutionEdge, producerSubtask: number): string {
    const producer = this.vertices.get(`${this.jobId}.${edge.from}.${producerSubtask}`)!;
    return `${this.jobId}/${edge.index}/${producerSubtask}/${producer.attempt}`;
  }

  /** The partitions a vertex's current attempt produces. */
  partitionsOf(vertex: ExecutionVertex): string[] {
    return this.edges.filter((e) => e.from === vertex.stage).map((e) => this.partitionId(e, vertex.subtask));
  }

  /** Registers every partition with the tracker: producer, consumers and where it will live. */
  trackPartitions(tracker: PartitionTracker): void {
    for (const vertex of this.vertices.values()) this.trackPartitionsOf(vertex, tracker);
  }

  /** Registers the partitions of a vertex's current attempt. */
  trackPartitionsOf(vertex: ExecutionVertex, tracker: PartitionTracker): void {
    for (const edge of this.edges.filter((e) => e.from === vertex.stage)) {
      const consumers = this.verticesOf(edge.to).map((v) => v.taskId);
      tracker.track({
        id: this.partitionId(edge, vertex.subtask),
        jobId: this.jobId,
        type: edge.type,
        producerTask: vertex.taskId,
        consumerTasks: edge.pointwise ? [consumers[vertex.subtask]] : consumers,
      });
    }
  }

  /**
   * A region may start once every partition it reads from outside is announced: one
   * consumable while produced (hybrid) at its first buffer, any other once finished.
   */
  isDeployable(region: number, tracker: PartitionTracker): boolean {
    return this.regionInputs[region].every((l) => tracker.get(this.linkPartition(l))?.ready === true);
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
      attempt: vertex.attempt,
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
   * the build input: a probe side whose partitions cannot be read again is then made
   * blocking (it goes to memory or disk).
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
}

import type { StageDefinition } from '../../job/JobDefinition.js';
import type { ValidatedJob } from '../../job/ValidatedJob.js';
import type { ConsumedPartitionGroup, DeflatedGroup, JobReference, PartitionLocation, TaskDeploymentMessage } from '../../rpc/TaskDeployment.js';
import { encodeGroup, groupOnWire } from '../../rpc/ConsumedPartitionGroup.js';
import type { PartitionType } from '../../network/networkThread/partition/PartitionType.js';
import { type CompressionCodec, compressionCodec } from '../../network/buffer/CompressionCodec.js';
import { partitionType } from '../../network/networkThread/partition/PartitionTypes.js';
import type { PartitionTracker } from './PartitionTracker.js';
import { ExecutionVertex } from './ExecutionVertex.js';
import { pipelinedRegions, type RegionEdge } from './PipelinedRegions.js';
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

/**
 * The partitions of an edge that the same consumers read, each consumer all of them
 * (Flink's ConsumedPartitionGroup): an all-to-all edge is one group, a forward edge one
 * a pair. Nothing on the JobManager is kept per producer x consumer.
 */
export interface PartitionGroup extends RegionEdge {
  edge: ExecutionEdge;
  /** The producer subtasks, in order; `from` holds their task ids. */
  producers: readonly number[];
}

/** A group entering a region from another, and its producers outside the region: the partitions the region waits for. */
export interface RegionInput {
  group: PartitionGroup;
  producers: readonly number[];
}

/**
 * Past this many producer x consumer pairs, a pipelined group's consumers are deployed
 * with the locations its producers are placed at (Flink does so within a pipelined
 * region: its slots are known at deployment), and ask for a partition not yet
 * registered again with backoff; announcing each partition to each consumer would be
 * that many control messages. Narrower groups keep the announcement, which costs a
 * small job no backoff.
 */
export const PLANNED_LOCATION_PAIRS = 4096;

/** instance i of n on worker floor(i*w/n): contiguous blocks, the same on every run. */
export function ownerOf(instance: number, n: number, workers: number): number {
  return Math.floor((instance * workers) / n);
}

/**
 * A validated job expanded to subtasks, partitions and channels, with slot sharing
 * (subtask i of every stage shares slot i) and deterministic placement of slot i
 * on TaskManager floor(i*w/p), so forward edges stay local. Built once a job; placed
 * again (`place`) while the job waits for slots.
 */
export class ExecutionGraph {
  readonly stages: readonly StageDefinition[];
  readonly parallelism: number;
  readonly edges: ExecutionEdge[] = [];
  readonly vertices = new Map<string, ExecutionVertex>();
  /** Every edge's groups: one for an all-to-all edge, one a subtask for a forward edge. */
  readonly groups: PartitionGroup[] = [];
  /** Pipelined regions of subtasks (task ids), deployed and restarted together; in topological order. */
  readonly regions: string[][];
  /** Per region, the groups that enter it from another: the partitions it reads. */
  readonly regionInputs: RegionInput[][];
  private readonly regionIndex = new Map<string, number>();
  /** The TaskManager of each of the job's slots: subtask i of every stage runs in slot i. */
  readonly slotOwners: string[] = [];
  /** Each stage's vertices by subtask, each slot's vertices. */
  private readonly byStage = new Map<string, ExecutionVertex[]>();
  private readonly bySlot: ExecutionVertex[][] = [];
  /** Each edge's groups, by edge index. */
  private readonly edgeGroups: PartitionGroup[][] = [];
  /** Where each TaskManager of the job serves its partitions. */
  private readonly dataAddresses = new Map<string, PartitionLocation>();
  /** Each group's deployment form, built once and shared by its consumers' descriptors, and the tracker's version it was built at. */
  private readonly encoded = new Map<PartitionGroup, { version: number; group: ConsumedPartitionGroup | DeflatedGroup }>();

  constructor(
    readonly jobId: string,
    validated: ValidatedJob,
    exchange: PartitionType,
    compression: CompressionCodec | null,
    readonly job: JobReference,
    taskManagers: TaskManagerInfo[],
    readonly bufferTimeout: number,
    /** The attempt its subtasks start at (JobSubmission.firstAttempt). */
    firstAttempt = 0,
  ) {
    this.stages = validated.stages;
    const parallelism = (this.parallelism = validated.parallelism);
    for (let slot = 0; slot < parallelism; slot++) this.bySlot.push([]);
    this.place(taskManagers);
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
      const p = stage.parallelism ?? parallelism;
      const vertices: ExecutionVertex[] = [];
      for (let subtask = 0; subtask < p; subtask++) {
        const vertex = new ExecutionVertex(`${jobId}.${stage.name}.${subtask}`, stage.name, subtask, p, this.slotOwners[subtask]);
        vertex.attempt = firstAttempt;
        this.vertices.set(vertex.taskId, vertex);
        vertices.push(vertex);
        this.bySlot[subtask].push(vertex);
      }
      this.byStage.set(stage.name, vertices);
    }
    for (const edge of this.edges) this.edgeGroups.push(this.groupsOf(edge));
    this.regions = pipelinedRegions([...this.vertices.keys()], this.groups);
    this.regions.forEach((region, r) => region.forEach((taskId) => this.regionIndex.set(taskId, r)));
    this.regionInputs = this.regions.map(() => []);
    for (const group of this.groups) this.addRegionInputs(group);
  }

  /** Slots each TaskManager gives this job: the TaskManagers it runs on, and nothing else. */
  get slots(): Map<string, number> {
    const slots = new Map<string, number>();
    for (const id of this.slotOwners) slots.set(id, (slots.get(id) ?? 0) + 1);
    return slots;
  }

  /** Places slot i (and every subtask in it) on TaskManager floor(i*w/p) of `taskManagers`, as if none had been placed before. */
  place(taskManagers: readonly TaskManagerInfo[]): void {
    this.dataAddresses.clear();
    this.slotOwners.length = 0;
    for (let slot = 0; slot < this.parallelism; slot++) this.moveSlot(slot, taskManagers[ownerOf(slot, this.parallelism, taskManagers.length)]);
  }

  /** Moves a slot (and every subtask in it) to another TaskManager. */
  moveSlot(slot: number, target: TaskManagerInfo): void {
    this.dataAddresses.set(target.id, { taskManagerId: target.id, host: target.host, dataPort: target.dataPort });
    this.slotOwners[slot] = target.id;
    for (const vertex of this.bySlot[slot]) vertex.taskManagerId = target.id;
  }

  /** The index in `regions` of a subtask's region. */
  regionOf(taskId: string): number {
    return this.regionIndex.get(taskId)!;
  }

  regionVertices(region: number): ExecutionVertex[] {
    return this.regions[region].map((taskId) => this.vertices.get(taskId)!);
  }

  stageParallelism(stage: string): number {
    return this.byStage.get(stage)!.length;
  }

  /** A stage's vertices by subtask (the graph's own array: read, do not change). */
  verticesOf(stage: string): readonly ExecutionVertex[] {
    return this.byStage.get(stage)!;
  }

  /** The partition of the producer's current attempt: a restarted producer makes a new one, never confused with the old. */
  partitionId(edge: ExecutionEdge, producerSubtask: number): string {
    return `${this.jobId}/${edge.index}/${producerSubtask}/${this.byStage.get(edge.from)![producerSubtask].attempt}`;
  }

  /** The partitions a vertex's current attempt produces. */
  partitionsOf(vertex: ExecutionVertex): string[] {
    return this.edges.filter((e) => e.from === vertex.stage).map((e) => this.partitionId(e, vertex.subtask));
  }

  /** Registers every partition with the tracker: producer, consumers and where it will live. */
  trackPartitions(tracker: PartitionTracker): void {
    for (const vertex of this.vertices.values()) this.trackPartitionsOf(vertex, tracker);
  }

  /** Registers the partitions of a vertex's current attempt; its consumers are its group's (one array, shared). */
  trackPartitionsOf(vertex: ExecutionVertex, tracker: PartitionTracker): void {
    for (const edge of this.edges) {
      if (edge.from !== vertex.stage) continue;
      const group = this.groupOf(edge, vertex.subtask);
      tracker.track({ id: this.partitionId(edge, vertex.subtask), jobId: this.jobId, type: edge.type, producerTask: vertex.taskId, consumerTasks: group.to, locatedAtDeploy: isLocatedAtDeploy(group) });
    }
  }

  /**
   * A region may start once every partition it reads from outside is announced: one
   * consumable while produced (hybrid) at its first buffer, any other once finished.
   */
  isDeployable(region: number, tracker: PartitionTracker): boolean {
    return this.regionInputs[region].every(({ group, producers }) => producers.every((s) => tracker.get(this.partitionId(group.edge, s))?.ready === true));
  }

  descriptor(vertex: ExecutionVertex, tracker: PartitionTracker): TaskDeploymentMessage {
    const inputs = this.edges
      .filter((e) => e.to === vertex.stage)
      .sort((a, b) => a.input - b.input)
      .map((edge) => ({ exchange: edge.type.name, subpartition: edge.pointwise ? 0 : vertex.subtask, group: this.encodedGroup(this.groupOf(edge, vertex.subtask), tracker) }));
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

  /** The group of an edge that holds a subtask (a producer's or a consumer's: a forward edge pairs equal subtasks). */
  groupOf(edge: ExecutionEdge, subtask: number): PartitionGroup {
    const groups = this.edgeGroups[edge.index];
    return edge.pointwise ? groups[subtask] : groups[0];
  }

  private groupsOf(edge: ExecutionEdge): PartitionGroup[] {
    const producers = this.byStage.get(edge.from)!;
    const consumers = this.byStage.get(edge.to)!;
    const make = (from: readonly ExecutionVertex[], to: readonly ExecutionVertex[]): PartitionGroup => {
      const group = { edge, type: edge.type, from: from.map((v) => v.taskId), to: to.map((v) => v.taskId), producers: from.map((v) => v.subtask) };
      this.groups.push(group);
      return group;
    };
    return edge.pointwise ? producers.map((producer, i) => make([producer], [consumers[i]])) : [make(producers, consumers)];
  }

  /** Adds a group to the inputs of each region holding its consumers, with its producers outside that region. */
  private addRegionInputs(group: PartitionGroup): void {
    const producerRegions = group.from.map((taskId) => this.regionOf(taskId));
    for (const region of new Set(group.to.map((taskId) => this.regionOf(taskId)))) {
      // Usually none of the producers is inside: the group's own array is shared.
      const inside = producerRegions.some((r) => r === region);
      const producers = inside ? group.producers.filter((_, i) => producerRegions[i] !== region) : group.producers;
      if (producers.length > 0) this.regionInputs[region].push({ group, producers });
    }
  }

  /** A group's deployment form: built again only when the tracker changed since (an attempt or a location moved). */
  private encodedGroup(group: PartitionGroup, tracker: PartitionTracker): ConsumedPartitionGroup | DeflatedGroup {
    const cached = this.encoded.get(group);
    if (cached?.version === tracker.version) return cached.group;
    const producers = this.byStage.get(group.edge.from)!;
    const attempts = group.producers.map((s) => producers[s].attempt);
    const planned = isLocatedAtDeploy(group);
    const locations = group.producers.map((s) => tracker.get(this.partitionId(group.edge, s))?.location ?? (planned ? this.dataAddresses.get(producers[s].taskManagerId)! : null));
    const encoded = groupOnWire(encodeGroup(`${this.jobId}/${group.edge.index}/`, group.producers[0], attempts, locations));
    this.encoded.set(group, { version: tracker.version, group: encoded });
    return encoded;
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

/** Whether a group's consumers get its producers' placed locations at deployment, not announcements (PLANNED_LOCATION_PAIRS). */
function isLocatedAtDeploy(group: PartitionGroup): boolean {
  return group.type.isPipelined && !group.type.isReReadable && group.from.length * group.to.length > PLANNED_LOCATION_PAIRS;
}

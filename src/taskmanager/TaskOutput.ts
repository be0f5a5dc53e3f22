import { sinkSpec } from '../connectors/Sinks.js';
import type { SinkContext, SinkWriter } from '../connectors/SinkSpec.js';
import { SpillwayError } from '../errors/Errors.js';
import type { Partitioning, StageDefinition } from '../job/JobDefinition.js';
import type { ResultPartitionWriter } from '../network/ResultPartitionWriter.js';
import { encodeEvent, EventType, type Barrier } from '../network/Events.js';
import {
  BroadcastSelector,
  ForwardSelector,
  KeyGroupSelector,
  RangeSelector,
  RebalanceSelector,
  type ChannelSelector,
} from '../network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../network/taskThread/writer/RecordWriter.js';
import type { OutputDescriptor } from '../rpc/TaskDeployment.js';
import { combining, type Chain, type Emit } from '../runtime/Chain.js';
import { edgePlan } from '../runtime/EdgePlan.js';
import type { StreamContext } from '../runtime/StreamContext.js';
import { LatencySamples } from '../runtime/time/LatencySamples.js';
import type { OutputInFlight } from '../runtime/checkpoint/InFlightData.js';

/** A task's output partition, as the task holds it: written, and released if the task fails. */
export type OutputPartition = ResultPartitionWriter & { release(cause: Error): void };

/** Where a task's records and events leave it: its output edges' writers, or its sink. */
export interface TaskOutput extends Chain {
  /** The task went idle or active: its consumers leave it out of their watermark, or take it back. */
  status(idle: boolean): void | Promise<void>;
  /** A latency marker made by a source at `origin` passes on (to one channel of each edge), or ends here at a sink. */
  latencyMarker(origin: number): void | Promise<void>;
  /** A checkpoint barrier on to every channel: behind what was emitted, or (unaligned) ahead of what is queued, whose copies it gives. */
  barrier(barrier: Barrier): Promise<OutputInFlight[]>;
  /** Restoring: what an unaligned checkpoint's barrier overtook in each subpartition goes out again, ahead of anything new. */
  restoreInFlight(outputs: readonly OutputInFlight[]): Promise<void>;
  /** The task failed or was canceled: what is batched or written is dropped. */
  abort(): void;
}

/**
 * The output edges of a task that feeds other stages: a RecordWriter per edge, routed
 * as its consumer's first operator asks (with a map-side combine before a keyed
 * exchange where it has one), records with their event timestamps where the stage is
 * in event time, and watermarks, idleness and latency markers as events on every channel.
 */
export class EdgeOutput implements TaskOutput {
  readonly writers: RecordWriter<unknown>[] = [];
  readonly push: Emit;
  private readonly emits: Emit[] = [];
  private readonly ends: (() => Promise<void>)[] = [];
  private markerChannel = 0;

  constructor(
    outputs: readonly OutputDescriptor[],
    stages: readonly StageDefinition[],
    partition: (index: number) => OutputPartition,
    private readonly stream: StreamContext,
    timestamped: boolean,
    private readonly subtask: number,
    bufferTimeout: number,
  ) {
    for (const [index, out] of outputs.entries()) {
      const consumer = stages.find((s) => s.name === out.consumerStage)!;
      // The consumer's first operator says how it is fed: routing, and a combine before the exchange.
      const { routing, combiner } = edgePlan(consumer, out.consumerInput);
      const writer = new RecordWriter<unknown>(partition(index), this.selector(routing, out.numSubpartitions), bufferTimeout);
      this.writers.push(writer);
      const time = stream.time;
      const emit: Emit = timestamped ? (r) => writer.emitTimestamped(r, time.timestamp) : (r) => writer.emit(r);
      const close = (): Promise<void> => writer.close();
      if (combiner) {
        const combined = combining(combiner, emit, close);
        this.emits.push(combined.push);
        this.ends.push(combined.end);
      } else {
        this.emits.push(emit);
        this.ends.push(close);
      }
    }
    const emits = this.emits;
    this.push = emits.length === 1 ? emits[0] : (r) => emitToEach(emits, r, 0);
  }

  async end(): Promise<void> {
    await Promise.all(this.ends.map((end) => end()));
  }

  watermark(watermark: number, origin: number): void | Promise<void> {
    return this.everyChannel(encodeEvent({ type: EventType.WATERMARK, timestamp: watermark, origin }));
  }

  status(idle: boolean): void | Promise<void> {
    return this.everyChannel(encodeEvent({ type: EventType.STREAM_STATUS, idle }));
  }

  async barrier(barrier: Barrier): Promise<OutputInFlight[]> {
    const event = encodeEvent({ type: EventType.CHECKPOINT_BARRIER, ...barrier });
    if (!barrier.unaligned) {
      await this.everyChannel(event);
      return [];
    }
    const overtaken: OutputInFlight[] = [];
    for (const [partition, writer] of this.writers.entries()) {
      const bySubpartition = await writer.emitPriorityEvent(event);
      bySubpartition.forEach((buffers, subpartition) => buffers.length > 0 && overtaken.push({ partition, subpartition, buffers }));
    }
    return overtaken;
  }

  async restoreInFlight(outputs: readonly OutputInFlight[]): Promise<void> {
    for (const { partition, subpartition, buffers } of outputs) await this.writers[partition].emitBytes(subpartition, buffers);
  }

  latencyMarker(origin: number): void | Promise<void> {
    const event = encodeEvent({ type: EventType.LATENCY_MARKER, origin });
    // One channel of each edge, in turn (Flink sends a marker to a random one): its trip stands for the records'.
    const channel = this.markerChannel++;
    return sequence(this.writers.map((writer) => () => writer.emitEvent(event, channel % writer.channels)));
  }

  abort(): void {
    for (const writer of this.writers) writer.abort();
  }

  private everyChannel(event: Uint8Array): void | Promise<void> {
    return sequence(this.writers.map((writer) => () => writer.emitEvent(event)));
  }

  private selector(partitioning: Partitioning, channels: number): ChannelSelector<unknown> {
    switch (partitioning.type) {
      case 'hash':
        return new KeyGroupSelector(partitioning.key, this.stream.maxParallelism);
      case 'range':
        return new RangeSelector(partitioning.key, partitioning.boundaries(channels));
      case 'rebalance':
        return new RebalanceSelector(this.subtask);
      case 'forward':
        return new ForwardSelector();
      case 'broadcast':
        return new BroadcastSelector();
    }
  }
}

/**
 * A task that ends in a sink: its writer, and the latencies that reach it (a latency
 * marker's trip from its source; a watermark's from the assigner that made it, which
 * is how long a window's results took at most, since they come before it).
 */
export class SinkOutput implements TaskOutput {
  readonly markerLatency = new LatencySamples();
  readonly watermarkLatency = new LatencySamples();
  readonly push: Emit;

  private constructor(private readonly writer: SinkWriter) {
    this.push = (r) => writer.push(r);
  }

  static async open(stage: StageDefinition, context: SinkContext): Promise<SinkOutput> {
    const sink = stage.sink;
    if (sink === undefined) throw new SpillwayError('SPW_ERR_INTERNAL', `stage ${stage.name} has no sink`);
    return new SinkOutput(await sinkSpec(sink).open(sink, context));
  }

  end(): Promise<void> {
    return this.writer.end();
  }

  watermark(_watermark: number, origin: number): void {
    if (origin > 0) this.watermarkLatency.add(Date.now() - origin);
  }

  status(): void {}

  /** A sink's part in a checkpoint is its transaction (TaskCheckpoints): the barrier ends here. */
  barrier(): Promise<OutputInFlight[]> {
    return Promise.resolve([]);
  }

  /** A sink has no output channels. */
  restoreInFlight(): Promise<void> {
    return Promise.resolve();
  }

  /** The sink's writer, for its part in checkpoints. */
  get sinkWriter(): SinkWriter {
    return this.writer;
  }

  latencyMarker(origin: number): void {
    this.markerLatency.add(Date.now() - origin);
  }

  abort(): void {
    this.writer.abort();
  }
}

/** Runs each step in turn, waiting where one has to. */
function sequence(steps: (() => void | Promise<void>)[], from = 0): void | Promise<void> {
  for (let i = from; i < steps.length; i++) {
    const waiting = steps[i]();
    if (waiting) return waiting.then(() => sequence(steps, i + 1));
  }
}

/** Emits a record to several outputs in turn, waiting where one has to. */
function emitToEach(emits: Emit[], record: unknown, from: number): void | Promise<void> {
  for (let i = from; i < emits.length; i++) {
    const waiting = emits[i](record);
    if (waiting) return waiting.then(() => emitToEach(emits, record, i + 1));
  }
}

import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import type { JobDefinition, Partitioning, Sink, StageDefinition } from '../job/JobDefinition.js';
import type { PartitionLocation, TaskCounters, TaskDeploymentDescriptor } from '../job/TaskDeployment.js';
import { listInputFiles, readChunks, readLines, splitsFor } from '../job/TextSplits.js';
import type { BufferPool } from '../network/buffer/BufferPool.js';
import type { InputGate } from '../network/consumer/InputGate.js';
import { RecordReader } from '../network/consumer/RecordReader.js';
import type { ResultPartition } from '../network/partition/ResultPartition.js';
import type { ChannelSource, ShuffleEnvironment } from '../network/ShuffleEnvironment.js';
import {
  BroadcastSelector,
  ForwardSelector,
  KeyGroupSelector,
  RangeSelector,
  RebalanceSelector,
  type ChannelSelector,
} from '../network/writer/ChannelSelector.js';
import { RecordWriter } from '../network/writer/RecordWriter.js';
import { combinerOf, combining, compileChain, emitAll, type Chain, type Emit } from './OperatorChain.js';

/** What a running task tells its TaskManager. */
export interface TaskListener {
  partitionReady(partitionId: string): void;
  collected(records: unknown[]): Promise<void>;
}

/** A collect sink refuses to hold more than this; bigger results belong in a text sink. */
export const MAX_COLLECTED_RECORDS = 2_000_000;

/**
 * One subtask of a stage: reads its source or input gates, pushes records through
 * the stage's chained operators, and writes them to its output partitions or sink.
 */
export class Task {
  private readonly stage: StageDefinition;
  private readonly writers: RecordWriter<unknown>[] = [];
  private readonly partitions: ResultPartition[] = [];
  private readonly readers: RecordReader<unknown>[] = [];
  private readonly gates: { gate: InputGate; pool: BufferPool | null }[] = [];
  private readonly locations: (PartitionLocation | null)[][];
  private locationsKnown: (() => void) | null = null;
  private canceled = false;

  constructor(
    readonly descriptor: TaskDeploymentDescriptor,
    private readonly job: JobDefinition,
    private readonly env: ShuffleEnvironment,
    private readonly taskManagerId: string,
    private readonly listener: TaskListener,
  ) {
    const stage = job.stages.find((s) => s.name === descriptor.stage);
    if (!stage) throw new Error(`job ${job.name} has no stage ${descriptor.stage}`);
    this.stage = stage;
    this.locations = descriptor.inputs.map((gate) => gate.channels.map((c) => c.location));
  }

  get counters(): TaskCounters {
    const sum = <T>(items: T[], f: (t: T) => number): number => items.reduce((a, t) => a + f(t), 0);
    return {
      recordsIn: sum(this.readers, (r) => r.recordsIn),
      bytesIn: sum(this.readers, (r) => r.bytesIn),
      recordsOut: sum(this.writers, (w) => w.recordsOut),
      bytesOut: sum(this.writers, (w) => w.bytesOut),
    };
  }

  /** The JobManager tells where a producer's partition is, once it is ready. */
  updatePartition(partitionId: string, location: PartitionLocation): void {
    this.descriptor.inputs.forEach((gate, g) =>
      gate.channels.forEach((channel, c) => {
        if (channel.partitionId === partitionId) this.locations[g][c] = location;
      }),
    );
    this.locationsKnown?.();
  }

  async run(): Promise<void> {
    try {
      const output = await this.createOutput();
      // A join reads the inputs itself; the operators after it are chained.
      const operators = (this.stage.operators ?? []).filter((op) => !('join' in op));
      const chain = compileChain(operators, output.push, output.end);
      if (this.stage.source) await this.readSource(chain);
      else await this.readInputs(chain);
      this.checkCanceled();
      await chain.end();
    } catch (error) {
      this.abort();
      throw error;
    }
  }

  get isCanceled(): boolean {
    return this.canceled;
  }

  cancel(): void {
    this.canceled = true;
    this.locationsKnown?.();
    this.abort();
  }

  private abort(): void {
    for (const writer of this.writers) writer.abort();
    for (const partition of this.partitions) this.env.partitions.release(partition.id, new Error(`task ${this.descriptor.taskId} stopped`));
    this.closeGates();
  }

  private closeGates(): void {
    for (const { gate, pool } of this.gates.splice(0)) {
      gate.close();
      pool?.destroy();
    }
  }

  private checkCanceled(): void {
    if (this.canceled) throw new Error(`task ${this.descriptor.taskId} was canceled`);
  }

  private async createOutput(): Promise<Chain> {
    if (this.stage.sink) return this.createSink(this.stage.sink);
    const emits: Emit[] = [];
    const ends: (() => Promise<void>)[] = [];
    for (const out of this.descriptor.outputs) {
      const consumer = this.job.stages.find((s) => s.name === out.consumerStage)!;
      const partitioning = consumer.inputs![out.consumerInput].partitioning;
      const partition = this.env.createPartition(out.partitionId, out.type, out.numSubpartitions);
      this.partitions.push(partition);
      if (out.type === 'pipelined') partition.onFirstBuffer = () => this.listener.partitionReady(partition.id);
      const first = consumer.operators?.[0];
      // Map-side combined [key, combiner] pairs are routed by their key.
      const routing: Partitioning = first && 'combineByKey' in first ? { type: 'hash', key: (r) => (r as [unknown])[0] } : partitioning;
      const writer = new RecordWriter<unknown>(partition, this.selector(routing, out.numSubpartitions), this.descriptor.bufferTimeout);
      this.writers.push(writer);
      const close = async (): Promise<void> => {
        await writer.close();
        if (out.type === 'blocking') this.listener.partitionReady(partition.id);
      };
      // A keyed reduce or combine downstream is associative: fold before the exchange (map-side combine).
      if (first && ('reduceByKey' in first || 'combineByKey' in first) && partitioning.type === 'hash') {
        const combiner = combining(combinerOf(first), (r) => writer.emit(r), close);
        emits.push(combiner.push);
        ends.push(combiner.end);
      } else {
        emits.push((r) => writer.emit(r));
        ends.push(close);
      }
    }
    const push: Emit = emits.length === 1 ? emits[0] : (r) => emitToEach(emits, r, 0);
    return { push, end: async () => void (await Promise.all(ends.map((end) => end()))) };
  }

  private selector(partitioning: Partitioning, channels: number): ChannelSelector<unknown> {
    switch (partitioning.type) {
      case 'hash':
        return new KeyGroupSelector(partitioning.key);
      case 'range':
        return new RangeSelector(partitioning.key, partitioning.boundaries(channels));
      case 'rebalance':
        return new RebalanceSelector(this.descriptor.subtask);
      case 'forward':
        return new ForwardSelector();
      case 'broadcast':
        return new BroadcastSelector();
    }
  }

  private createSink(sink: Sink): Chain {
    if ('collect' in sink) {
      const records: unknown[] = [];
      return {
        push: (r) => {
          if (records.length >= MAX_COLLECTED_RECORDS) {
            throw new Error(`a collect sink holds at most ${MAX_COLLECTED_RECORDS} records; give the job an output folder`);
          }
          records.push(r);
        },
        end: () => this.listener.collected(records),
      };
    }
    return this.textSink(sink.text);
  }

  private textSink(dir: string): Chain {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `part-${String(this.descriptor.subtask).padStart(5, '0')}`);
    const stream = fs.createWriteStream(file);
    let pending = '';
    const write = async (): Promise<void> => {
      const text = pending;
      pending = '';
      if (!stream.write(text)) await once(stream, 'drain');
    };
    return {
      push: (r) => {
        pending += (Array.isArray(r) && r.length === 2 ? `${r[0]}\t${r[1]}` : JSON.stringify(r)) + '\n';
        if (pending.length >= 1 << 16) return write();
      },
      end: async () => {
        await write();
        stream.end();
        await once(stream, 'finish');
      },
    };
  }

  private async readSource(chain: Chain): Promise<void> {
    const source = this.stage.source!;
    const { subtask, parallelism } = this.descriptor;
    if ('text' in source) {
      for (const split of splitsFor(listInputFiles(source.text), subtask, parallelism)) {
        this.checkCanceled();
        const push = (record: string | Buffer): void | Promise<void> => {
          this.checkCanceled();
          return chain.push(record);
        };
        await (source.chunks ? readChunks(split, push) : readLines(split, push));
      }
      return;
    }
    const iterator = source.generate(subtask, parallelism)[Symbol.iterator]();
    // Yield to the event loop now and then, so flush timers, partition requests and cancels get through.
    let count = 0;
    for (let step = iterator.next(); !step.done; step = iterator.next()) {
      const waiting = chain.push(step.value);
      if (waiting) await waiting;
      if (++count % 4096 === 0) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.checkCanceled();
      }
    }
  }

  private async readInputs(chain: Chain): Promise<void> {
    const first = this.stage.operators?.[0];
    if (first && 'join' in first) await this.join(first.join, chain);
    else await (await this.openInput(0)).forEach(chain.push);
    this.closeGates();
  }

  /** A reader of input g, once every producer of that input is known to be ready (each input waits on its own). */
  private async openInput(g: number): Promise<RecordReader<unknown>> {
    while (!this.locations[g].every((l) => l !== null)) {
      await new Promise<void>((resolve) => {
        this.locationsKnown = resolve;
      });
      this.checkCanceled();
    }
    const sources: ChannelSource[] = this.descriptor.inputs[g].channels.map((channel, c) => {
      const location = this.locations[g][c]!;
      const local = location.taskManagerId === this.taskManagerId;
      return {
        address: { partitionId: channel.partitionId, subpartition: channel.subpartition },
        remote: local ? null : { host: location.host, port: location.dataPort },
      };
    });
    const input = this.env.createInputGate(sources, `${this.descriptor.taskId}#${g}`);
    this.gates.push(input);
    const reader = new RecordReader<unknown>(input.gate);
    this.readers.push(reader);
    return reader;
  }

  /** Builds a hash table of input 0 to its end, then probes it with input 1. */
  private async join(
    spec: { keys: [(r: unknown) => unknown, (r: unknown) => unknown]; combine: (l: unknown, r: unknown) => unknown },
    chain: Chain,
  ): Promise<void> {
    const build = new Map<unknown, unknown[]>();
    const [leftKey, rightKey] = spec.keys;
    await (await this.openInput(0)).forEach((r) => {
      const k = leftKey(r);
      const list = build.get(k);
      if (list) list.push(r);
      else build.set(k, [r]);
    });
    await (await this.openInput(1)).forEach((r) => {
      const matches = build.get(rightKey(r));
      if (matches) return emitAll(matches.map((m) => spec.combine(m, r)), chain.push);
    });
  }
}

/** Emits a record to several outputs in turn, waiting where one has to. */
function emitToEach(emits: Emit[], record: unknown, from: number): void | Promise<void> {
  for (let i = from; i < emits.length; i++) {
    const waiting = emits[i](record);
    if (waiting) return waiting.then(() => emitToEach(emits, record, i + 1));
  }
}

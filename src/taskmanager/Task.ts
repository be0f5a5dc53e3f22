import type { JobDefinition, Partitioning, Sink, StageDefinition } from '../job/JobDefinition.js';
import type { TaskCounters, TaskDeploymentDescriptor } from '../job/TaskDeployment.js';
import { openTextSink, type TextSinkWriter } from '../job/TextSink.js';
import { readChunks, readLines, type TextSplit } from '../job/TextSplits.js';
import type { InputGate } from '../network/consumer/InputGate.js';
import { RecordReader } from '../network/consumer/RecordReader.js';
import type { ResultPartitionWriter } from '../network/partition/ResultPartitionWriter.js';
import {
  BroadcastSelector,
  ForwardSelector,
  KeyGroupSelector,
  RangeSelector,
  RebalanceSelector,
  type ChannelSelector,
} from '../network/writer/ChannelSelector.js';
import { RecordWriter } from '../network/writer/RecordWriter.js';
import { HybridHashJoin, type JoinSpec } from './memory/HybridHashJoin.js';
import { ManagedMemory, type ManagedMemorySpec } from './memory/ManagedMemory.js';
import { combinerOf, combining, compileChain, type Chain, type Emit } from './OperatorChain.js';

/** What a running task tells its TaskManager. */
export interface TaskListener {
  /** The records of a collect sink, once its input ended; the task finishes when they are delivered. */
  collected(records: unknown[]): Promise<void>;
  /** The next splits of the task's text source, handed out as the task asks; empty once none are left. */
  nextSplits(): Promise<TextSplit[]>;
}

/** A task's data plane: its output partitions and input gates, by their index in its deployment. */
export interface TaskShuffle {
  partition(output: number): ResultPartitionWriter & { release(cause: Error): void };
  /** A gate over input g; it reads once every producer of that input is known to be ready. */
  inputGate(input: number): InputGate;
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
  private readonly partitions: (ResultPartitionWriter & { release(cause: Error): void })[] = [];
  private readonly readers: RecordReader<unknown>[] = [];
  private readonly gates: InputGate[] = [];
  private textSink: TextSinkWriter | null = null;
  private readonly memory: ManagedMemory;
  private canceled = false;
  private readonly started = performance.now();

  /** Without `memory` (a task run outside a TaskManager), its operators hold everything and never spill. */
  constructor(
    readonly descriptor: TaskDeploymentDescriptor,
    private readonly job: JobDefinition,
    private readonly shuffle: TaskShuffle,
    private readonly listener: TaskListener,
    memory?: ManagedMemorySpec,
  ) {
    const stage = job.stages.find((s) => s.name === descriptor.stage);
    if (!stage) throw new Error(`job ${job.name} has no stage ${descriptor.stage}`);
    this.stage = stage;
    this.memory = memory ? ManagedMemory.of(memory, job.stages.flatMap((s) => s.operators ?? [])) : ManagedMemory.unbounded();
  }

  get counters(): TaskCounters {
    const sum = <T>(items: T[], f: (t: T) => number): number => items.reduce((a, t) => a + f(t), 0);
    const idleMs = sum(this.readers, (r) => r.idleMs);
    const backPressuredMs = sum(this.writers, (w) => w.backPressuredMs);
    return {
      recordsIn: sum(this.readers, (r) => r.recordsIn),
      bytesIn: sum(this.readers, (r) => r.bytesIn),
      recordsOut: sum(this.writers, (w) => w.recordsOut),
      bytesOut: sum(this.writers, (w) => w.bytesOut),
      busyMs: Math.max(0, performance.now() - this.started - idleMs - backPressuredMs),
      backPressuredMs,
      idleMs,
      outputs: this.writers.map((w) => ({ records: w.recordsOut, bytes: w.bytesOut })),
      spilledBytes: this.memory.spilledBytes,
    };
  }

  async run(): Promise<void> {
    try {
      const output = await this.createOutput();
      // A join reads the inputs itself; the operators after it are chained.
      const operators = (this.stage.operators ?? []).filter((op) => !('join' in op));
      const chain = compileChain(operators, output.push, output.end, this.memory);
      if (this.stage.source) await this.readSource(chain);
      else await this.readInputs(chain);
      this.checkCanceled();
      await chain.end();
    } catch (error) {
      this.abort();
      throw error;
    } finally {
      // Spill files go with the task, however it ends.
      this.memory.release();
    }
  }

  get isCanceled(): boolean {
    return this.canceled;
  }

  cancel(): void {
    this.canceled = true;
    this.memory.cancel();
    this.abort();
  }

  private abort(): void {
    for (const writer of this.writers) writer.abort();
    for (const partition of this.partitions) partition.release(new Error(`task ${this.descriptor.taskId} stopped`));
    this.textSink?.abort();
    this.closeGates();
  }

  private closeGates(): void {
    for (const gate of this.gates.splice(0)) gate.close();
  }

  private checkCanceled(): void {
    if (this.canceled) throw new Error(`task ${this.descriptor.taskId} was canceled`);
  }

  private async createOutput(): Promise<Chain> {
    if (this.stage.sink) return this.createSink(this.stage.sink);
    const emits: Emit[] = [];
    const ends: (() => Promise<void>)[] = [];
    for (const [index, out] of this.descriptor.outputs.entries()) {
      const consumer = this.job.stages.find((s) => s.name === out.consumerStage)!;
      const partitioning = consumer.inputs![out.consumerInput].partitioning;
      const partition = this.shuffle.partition(index);
      this.partitions.push(partition);
      const first = consumer.operators?.[0];
      // Map-side combined [key, combiner] pairs are routed by their key.
      const routing: Partitioning = first && 'combineByKey' in first ? { type: 'hash', key: (r) => (r as [unknown])[0] } : partitioning;
      const writer = new RecordWriter<unknown>(partition, this.selector(routing, out.numSubpartitions), this.descriptor.bufferTimeout);
      this.writers.push(writer);
      const close = (): Promise<void> => writer.close();
      // A keyed reduce or combine downstream is associative: fold before the exchange (map-side combine),
      // unless this stage ends in an accumulate, whose state did (a reduce only needs it as an optimization).
      const combined = first !== undefined && 'reduceByKey' in first && this.endsInAccumulate;
      if (first && ('reduceByKey' in first || 'combineByKey' in first) && partitioning.type === 'hash' && !combined) {
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

  private get endsInAccumulate(): boolean {
    const last = this.stage.operators?.at(-1);
    return last !== undefined && 'accumulate' in last;
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

  private async createSink(sink: Sink): Promise<Chain> {
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
    const { jobId, subtask, attempt } = this.descriptor;
    const writer = await openTextSink(sink.text, jobId, subtask, attempt);
    this.textSink = writer;
    return { push: (r) => writer.push(r), end: () => writer.end() };
  }

  private async readSource(chain: Chain): Promise<void> {
    const source = this.stage.source!;
    if ('text' in source) {
      const push = (record: string | Buffer): void | Promise<void> => {
        this.checkCanceled();
        return chain.push(record);
      };
      // One ask is always in flight while splits are read, so the scan never waits for the JobManager's answer.
      const ask = (): Promise<TextSplit[]> => {
        const answer = this.listener.nextSplits();
        // An ask left behind by a failed read must not become an unhandled rejection.
        answer.catch(() => undefined);
        return answer;
      };
      let next = ask();
      for (let splits = await next; splits.length > 0; splits = await next) {
        next = ask();
        for (const split of splits) {
          this.checkCanceled();
          await (source.chunks ? readChunks(split, push, { reuse: source.reuse }) : readLines(split, push));
        }
      }
      return;
    }
    const { subtask, parallelism } = this.descriptor;
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
    else await this.openInput(0).forEach(chain.push);
    this.closeGates();
  }

  /** A reader of input g; its gate reads once every producer of that input is ready (each input waits on its own). */
  private openInput(g: number): RecordReader<unknown> {
    this.checkCanceled();
    const gate = this.shuffle.inputGate(g);
    this.gates.push(gate);
    const reader = new RecordReader<unknown>(gate);
    this.readers.push(reader);
    return reader;
  }

  /** A hybrid hash join: input 0 (the build side) to its end, then input 1 probes it; spills past its budget. */
  private async join(spec: JoinSpec, chain: Chain): Promise<void> {
    const join = new HybridHashJoin(spec, this.memory.operatorBudget, this.memory);
    await this.openInput(0).forEach((r) => join.build(r));
    await this.openInput(1).forEach((r) => join.probe(r, chain.push));
    await join.finish(chain.push);
  }
}

/** Emits a record to several outputs in turn, waiting where one has to. */
function emitToEach(emits: Emit[], record: unknown, from: number): void | Promise<void> {
  for (let i = from; i < emits.length; i++) {
    const waiting = emits[i](record);
    if (waiting) return waiting.then(() => emitToEach(emits, record, i + 1));
  }
}

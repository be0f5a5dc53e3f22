import { sourceSpec } from '../connectors/Sources.js';
import type { SourceContext } from '../connectors/SourceSpec.js';
import type { JobDefinition, KeyFn, StageDefinition } from '../job/JobDefinition.js';
import { assignsTimestamps, isBounded, normalizeStage, timestampedStages } from '../job/JobValidation.js';
import type { TaskCheckpointConfig, TaskCounters, TaskDeploymentDescriptor } from '../rpc/TaskDeployment.js';
import { SpillwayError } from '../errors/Errors.js';
import type { InputGate } from '../network/taskThread/consumer/InputGate.js';
import { RecordReader } from '../network/taskThread/consumer/RecordReader.js';
import type { Chain } from '../runtime/Chain.js';
import { compileChain, compileInputs } from '../runtime/OperatorChain.js';
import { dataHolders, operatorSpec } from '../runtime/operators/Operators.js';
import type { InputsStep } from '../runtime/operators/OperatorSpec.js';
import { StreamContext } from '../runtime/StreamContext.js';
import { StreamInput, type InputHandler } from '../runtime/StreamInput.js';
import { ManagedMemory, type ManagedMemorySpec } from '../runtime/memory/ManagedMemory.js';
import { EdgeOutput, SinkOutput, type OutputPartition, type TaskOutput } from './TaskOutput.js';
import { TaskCheckpoints, type CheckpointAck } from './TaskCheckpoints.js';
import { restoredState, type InputRouting, type RestoredState } from './RestoredState.js';
import type { SinkWriter } from '../connectors/SinkSpec.js';
import type { SerializedError } from '../errors/Errors.js';
import type { Barrier } from '../network/Events.js';

export { MAX_COLLECTED_RECORDS } from '../connectors/CollectSink.js';

/** What a running task tells its TaskManager. */
export interface TaskListener {
  /** The records of a collect sink: all once its input ended, or (unbounded) numbered parts as they come; resolves once delivered. */
  collected(records: unknown[], part?: number, origin?: number): Promise<void>;
  /** The next splits of the task's source, handed out as the task asks; empty once none are left (or, unbounded, none yet). */
  nextSplits(): Promise<unknown[]>;
  /** The task stored its part of a checkpoint. */
  checkpointAcknowledged?(ack: CheckpointAck): void;
  /** The task could not take part in a checkpoint. */
  checkpointDeclined?(checkpointId: number, error: SerializedError): void;
}

/** A checkpoint's control message to a task: trigger it (at a source), it completed, it was aborted. */
export type CheckpointMessage = { type: 'trigger'; barrier: Barrier } | { type: 'complete'; id: number } | { type: 'abort'; id: number };

/** Thrown by a source's context once a stop-with-savepoint was taken: the reading ends there. */
const STOPPED = new SpillwayError('SPW_ERR_INTERNAL', 'the source stopped for a savepoint');

/** A task's data plane: its output partitions and input gates, by their index in its deployment. */
export interface TaskShuffle {
  partition(output: number): OutputPartition;
  /** A gate over input g; it reads once every producer of that input is known to be ready. */
  inputGate(input: number): InputGate;
}

/** How often a source of an unbounded job sends a latency marker, ms (Flink's metrics.latency.interval). */
export const LATENCY_MARKER_INTERVAL_MS = 100;

/**
 * One subtask of a stage: reads its source or input gates, pushes records through
 * the stage's chained operators, and writes them to its output partitions or sink.
 * Everything that enters the chain does so from the task's one loop (the source's
 * or the input's), which runs the task's mail between records.
 */
export class Task {
  /** The stage, its source, operators and sink in the `kind` shape. */
  private readonly stage: StageDefinition;
  private readonly operators: NonNullable<StageDefinition['operators']>;
  private readonly partitions: OutputPartition[] = [];
  private readonly readers: RecordReader<unknown>[] = [];
  private input: StreamInput | null = null;
  private readonly gates: InputGate[] = [];
  private output: TaskOutput | null = null;
  private readonly memory: ManagedMemory;
  private readonly stream: StreamContext;
  private checkpoints: TaskCheckpoints | null = null;
  /** Which stages' records carry their event timestamps. */
  private readonly timestamped: Set<string>;
  private canceled = false;
  /** Records its source skipped as malformed (onError: 'skip'). */
  private malformedRecords = 0;
  /** What the task's source read: records handed to the chain, bytes of input. */
  private sourceRecords = 0;
  private sourceBytes = 0;
  /** Who waits and must be woken by a cancel. */
  private readonly onCancel = new Set<() => void>();
  private readonly started = performance.now();
  /** Time a source spent waiting for its input (a watched folder's next file, a paced generator's next due time), ms. */
  private sourceIdleMs = 0;

  /** Without `memory` (a task run outside a TaskManager), its operators hold everything and never spill. */
  constructor(
    readonly descriptor: TaskDeploymentDescriptor,
    private readonly job: JobDefinition,
    private readonly shuffle: TaskShuffle,
    private readonly listener: TaskListener,
    memory?: ManagedMemorySpec,
  ) {
    const stage = job.stages.find((s) => s.name === descriptor.stage);
    if (!stage) throw new SpillwayError('SPW_ERR_INTERNAL', `job ${job.name} has no stage ${descriptor.stage}`);
    const stages = job.stages.map(normalizeStage);
    this.stage = stages.find((s) => s.name === descriptor.stage)!;
    this.operators = this.stage.operators ?? [];
    const holders = dataHolders(stages.flatMap((s) => s.operators ?? []));
    this.memory = memory ? ManagedMemory.of(memory, holders) : ManagedMemory.unbounded();
    this.stream = new StreamContext(isBounded(stages));
    this.timestamped = timestampedStages(stages);
  }

  get counters(): TaskCounters {
    const sum = <T>(items: T[], f: (t: T) => number): number => items.reduce((a, t) => a + f(t), 0);
    const writers = this.output instanceof EdgeOutput ? this.output.writers : [];
    const readers = [...this.readers, ...(this.input ? [this.input] : [])];
    const idleMs = sum(readers, (r) => r.idleMs) + this.sourceIdleMs;
    const backPressuredMs = sum(writers, (w) => w.backPressuredMs);
    const counters: TaskCounters = {
      recordsIn: sum(readers, (r) => r.recordsIn),
      bytesIn: sum(readers, (r) => r.bytesIn),
      recordsOut: sum(writers, (w) => w.recordsOut),
      bytesOut: sum(writers, (w) => w.bytesOut),
      busyMs: Math.max(0, performance.now() - this.started - idleMs - backPressuredMs),
      backPressuredMs,
      idleMs,
      outputs: writers.map((w) => ({ records: w.recordsOut, bytes: w.bytesOut })),
      spilledBytes: this.memory.spilledBytes,
      malformedRecords: this.malformedRecords,
      sourceRecords: this.sourceRecords,
      sourceBytes: this.sourceBytes,
    };
    if (!this.stream.bounded) Object.assign(counters, this.streamCounters());
    return counters;
  }

  /** The event-time figures of a task of an unbounded job. */
  private streamCounters(): Partial<TaskCounters> {
    const watermark = this.stream.time.watermark;
    const counters: Partial<TaskCounters> = {
      watermark: Number.isFinite(watermark) ? watermark : null,
      lateRecordsDropped: this.stream.lateRecordsDropped,
      stateBytes: this.stream.stateBytes,
    };
    if (this.output instanceof SinkOutput) {
      counters.latency = this.output.markerLatency.figures();
      counters.watermarkLatency = this.output.watermarkLatency.figures();
    }
    return counters;
  }

  async run(): Promise<void> {
    try {
      const restored = this.descriptor.restore ? restoredState(this.descriptor.restore, this.descriptor.subtask, this.descriptor.parallelism, this.routing(), this.stream.maxParallelism) : null;
      const output = await this.openOutput(restored);
      this.output = output;
      this.stream.status = (idle) => output.status(idle);
      this.checkpoints = this.descriptor.checkpoints ? this.makeCheckpoints(this.descriptor.checkpoints, restored) : null;
      const options = { stream: this.stream, stage: this.stage.name, watermark: output.watermark.bind(output) };
      const first = this.operators[0];
      const spec = first === undefined ? undefined : operatorSpec(first);
      if (spec?.compileInputs) {
        const step = compileInputs(this.operators, { push: output.push, end: () => output.end(), watermark: options.watermark }, this.memory, options);
        await this.restore(restored);
        await this.readInputs(step, restored);
        await this.finish(step.end);
      } else {
        // A first operator that reads the inputs itself (a join) is not chained; the operators after it are.
        const chained = spec?.readInputs ? this.operators.slice(1) : this.operators;
        const chain = compileChain(chained, output.push, () => output.end(), this.memory, options);
        await this.restore(restored);
        if (this.stage.source) await this.readSource(chain, restored);
        else if (spec?.readInputs) await spec.readInputs(first, (g) => this.openReader(g), chain.push, { memory: this.memory, stream: this.stream, owner: first.kind });
        else await this.readInputs({ push: (_, r) => chain.push(r), end: chain.end, watermark: chain.watermark }, restored);
        await this.finish(chain.end);
      }
    } catch (error) {
      this.abort();
      throw error;
    } finally {
      this.stream.close();
      this.closeGates();
      // Spill files go with the task, however it ends.
      this.memory.release();
    }
  }

  /**
   * The input ended: the chain ends (firing what it holds: the end of a bounded input is
   * the end of event time) unless the task stopped for a savepoint, which keeps that
   * state for a later run; then its sink commits the savepoint before the task finishes.
   */
  private async finish(end: () => Promise<void>): Promise<void> {
    this.checkCanceled();
    const checkpoints = this.checkpoints;
    if (checkpoints?.stopped) {
      await this.output!.end();
      // The savepoint's completion comes as mail: the task runs its mail until then.
      await this.waitFor(checkpoints.stoppedAndCommitted());
    } else await end();
    await checkpoints?.drained();
  }

  /** The task's part in checkpoints; restoring, with what its sink had prepared. */
  private makeCheckpoints(config: TaskCheckpointConfig, restored: RestoredState | null): TaskCheckpoints {
    const { jobId, subtask, parallelism } = this.descriptor;
    const sink = (): SinkWriter | null => (this.output instanceof SinkOutput ? this.output.sinkWriter : null);
    const checkpoints = new TaskCheckpoints(jobId, this.stage.name, subtask, parallelism, config, this.stream, () => this.output!, sink, {
      acknowledged: (ack) => this.listener.checkpointAcknowledged?.(ack),
      declined: (id, error) => this.listener.checkpointDeclined?.(id, error),
    }, restored?.pending ?? []);
    checkpoints.hasInputs = this.stage.source === undefined;
    return checkpoints;
  }

  /** How the stage's inputs route their records: to share stored in-flight records out after a rescale. */
  private routing(): InputRouting {
    const inputs = this.stage.inputs ?? [];
    return {
      key: (input) => (inputs[input]?.partitioning.type === 'hash' ? (inputs[input].partitioning as { key: KeyFn }).key : undefined),
      timestamped: (input) => this.timestamped.has(inputs[input]?.from ?? ''),
    };
  }

  /** Restoring: every stateful operator takes its state back (the key groups this subtask owns now), and the sink commits what the checkpoint had prepared. */
  private async restore(restored: RestoredState | null): Promise<void> {
    if (restored === null) return;
    for (const [owner, operator] of this.stream.stateful) {
      const snapshots = restored.snapshots.flatMap((s) => (s.operators[owner] === undefined ? [] : [s.operators[owner]]));
      operator.restore(snapshots, restored.owns);
    }
    await this.checkpoints?.commitRestored();
    await this.output!.restoreInFlight(restored.outputs);
  }

  /** A control message of a checkpoint for this task, run as its mail (between records). */
  onCheckpoint(message: CheckpointMessage): void {
    // Mail runs once the task reads: its part in checkpoints is set up by then.
    this.stream.mailbox.put(() => {
      const checkpoints = this.checkpoints;
      if (checkpoints === null) return;
      if (message.type === 'trigger') checkpoints.trigger(message.barrier);
      else if (message.type === 'complete') return checkpoints.complete(message.id);
      else checkpoints.abort(message.id);
    });
  }

  get isCanceled(): boolean {
    return this.canceled;
  }

  cancel(): void {
    this.canceled = true;
    for (const wake of this.onCancel) wake();
    this.memory.cancel();
    this.abort();
  }

  private abort(): void {
    this.output?.abort();
    for (const partition of this.partitions) partition.release(new SpillwayError('SPW_ERR_PARTITION_RELEASED', `task ${this.descriptor.taskId} stopped`));
    this.closeGates();
  }

  private closeGates(): void {
    for (const gate of this.gates.splice(0)) gate.close();
  }

  private checkCanceled(): void {
    if (this.canceled) throw new SpillwayError('SPW_ERR_TASK_CANCELED', `task ${this.descriptor.taskId} was canceled`);
  }

  private async openOutput(restored: RestoredState | null): Promise<TaskOutput> {
    const { jobId, subtask, attempt } = this.descriptor;
    if (this.stage.sink) {
      const { bounded, timers } = this.stream;
      const every = (ms: number, mail: () => void | Promise<void>): void => timers.every(ms, mail);
      const checkpointed = this.descriptor.checkpoints !== undefined;
      return SinkOutput.open(this.stage, { jobId, subtask, attempt, bounded, every, checkpointed, pending: restored?.pending ?? [], collected: (records, part, origin) => this.listener.collected(records, part, origin) });
    }
    const partition = (index: number): OutputPartition => {
      const p = this.shuffle.partition(index);
      this.partitions.push(p);
      return p;
    };
    const timestamped = this.timestamped.has(this.stage.name);
    return new EdgeOutput(this.descriptor.outputs, this.job.stages.map(normalizeStage), partition, this.stream, timestamped, subtask, this.descriptor.bufferTimeout);
  }

  /**
   * Reads the stage's source; its records enter the chain with the task's mail run between
   * them, a checkpoint is taken at the reader's next resumable point, and in an unbounded
   * job latency markers go out beside them. A stop-with-savepoint ends the reading there.
   */
  private async readSource(chain: Chain, restored: RestoredState | null): Promise<void> {
    const source = this.stage.source!;
    const { mailbox, timers } = this.stream;
    if (!this.stream.bounded) timers.every(LATENCY_MARKER_INTERVAL_MS, () => this.output!.latencyMarker(Date.now()));
    const push = chain.push;
    const checkpoints = this.checkpoints;
    const stopped = (): void => {
      if (checkpoints?.stopped) throw STOPPED;
    };
    const context: SourceContext = {
      subtask: this.descriptor.subtask,
      parallelism: this.descriptor.parallelism,
      push: (record) => {
        this.sourceRecords++;
        if (this.canceled) this.checkCanceled();
        if (mailbox.hasMail) return mailbox.runAll().then(() => push(record));
        return push(record);
      },
      nextSplits: () => this.listener.nextSplits(),
      pause: async () => {
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.checkCanceled();
        if (mailbox.hasMail) await mailbox.runAll();
      },
      sleep: async (ms) => {
        await this.sleep(ms);
        stopped();
      },
      wait: (promise) => this.waitFor(promise),
      checkpointable: (position) => {
        this.position = position;
        if (checkpoints === null || !checkpoints.waiting) return stopped();
        const taken = checkpoints.atResumable(position);
        return taken ? taken.then(stopped) : stopped();
      },
      restored: restored?.snapshots.map((s) => s.source) ?? [],
      restoredParallelism: this.descriptor.restore?.parallelism,
      malformed: () => void this.malformedRecords++,
      read: (bytes) => void (this.sourceBytes += bytes),
    };
    try {
      await sourceSpec(source).read(source, context);
    } catch (error) {
      if (error !== STOPPED) throw error;
    }
  }

  /** A source reader's last resumable position: where a checkpoint that comes while it waits is taken. */
  private position: unknown = undefined;

  /** Waits `ms` running the task's mail meanwhile (the wait counts as idle); at once when the task is canceled. */
  private async sleep(ms: number): Promise<void> {
    const started = performance.now();
    const until = Date.now() + ms;
    const { mailbox } = this.stream;
    for (let left = ms; left > 0 && !this.canceled; left = until - Date.now()) {
      await Promise.race([this.cancelable(left), mailbox.whenMail()]);
      if (mailbox.hasMail && !this.canceled) await mailbox.runAll();
      // A checkpoint triggered while the source waits is taken at the position it waits at.
      if (this.checkpoints?.waiting) await this.checkpoints.atResumable(this.position);
      if (this.checkpoints?.stopped) break;
    }
    this.sourceIdleMs += performance.now() - started;
    this.checkCanceled();
  }

  /** Waits for `promise` running the task's mail meanwhile, and a checkpoint triggered meanwhile at the source's last resumable position. */
  private async waitFor<T>(promise: Promise<T>): Promise<T> {
    const { mailbox } = this.stream;
    let settled = false;
    const done = promise.finally(() => (settled = true));
    done.catch(() => undefined);
    while (!settled) {
      await Promise.race([done.then(() => undefined, () => undefined), mailbox.whenMail()]);
      if (mailbox.hasMail) await mailbox.runAll();
      if (this.checkpoints?.waiting) await this.checkpoints.atResumable(this.position);
      this.checkCanceled();
    }
    return promise;
  }

  /** Resolves after `ms`, or at once when the task is canceled. */
  private cancelable(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.onCancel.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.onCancel.add(done);
    });
  }

  /** Reads every input together, each record tagged with its input, watermarks, markers and barriers in their place. */
  private async readInputs(step: Required<InputsStep>, restored: RestoredState | null): Promise<void> {
    const inputs = (this.stage.inputs ?? []).map((input, g) => {
      this.checkCanceled();
      const gate = this.shuffle.inputGate(g);
      this.gates.push(gate);
      return { gate, timestamped: this.timestamped.has(input.from) };
    });
    const output = this.output!;
    // A stage that assigns timestamps makes its own watermarks: those of its inputs stop here.
    const ownWatermarks = this.operators.some(assignsTimestamps);
    const handler: InputHandler = {
      record: step.push,
      watermark: ownWatermarks ? null : step.watermark,
      status: (idle) => output.status(idle),
      latencyMarker: (origin) => output.latencyMarker(origin),
    };
    const checkpoints = this.checkpoints === null ? undefined : { actions: this.checkpoints, alignmentTimeoutMs: this.descriptor.checkpoints?.alignmentTimeout, replay: restored?.channels ?? [], overtaken: restored?.inputs ?? [] };
    this.input = new StreamInput(inputs, handler, this.stream.time, this.stream.mailbox, checkpoints);
    await this.input.run();
  }

  /** A reader of input g, for an operator that reads its inputs one after the other; its gate reads once every producer of that input is ready. */
  private openReader(g: number): RecordReader<unknown> {
    this.checkCanceled();
    const gate = this.shuffle.inputGate(g);
    this.gates.push(gate);
    const reader = new RecordReader<unknown>(gate);
    this.readers.push(reader);
    return reader;
  }
}

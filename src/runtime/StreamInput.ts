import { SpillwayError } from '../errors/Errors.js';
import type { NetworkBuffer } from '../network/buffer/NetworkBuffer.js';
import type { InputGate } from '../network/taskThread/consumer/InputGate.js';
import { EventType, eventOf } from '../network/Events.js';
import { NEED_MORE, RecordDeserializer } from '../network/taskThread/serialization/RecordDeserializer.js';
import type { Mailbox, TaskTime } from './time/Mailbox.js';
import { WatermarkValve } from './time/WatermarkValve.js';
import { BarrierHandler, type ChannelState, type CheckpointActions } from './checkpoint/BarrierHandler.js';
import type { InputInFlight } from './checkpoint/InFlightData.js';
import { DataType, unpooledBuffer } from '../network/buffer/NetworkBuffer.js';

/** Where a task's input goes: records by input, and the events that travel with them. */
export interface InputHandler {
  /** A record of input `input`; its event timestamp, where its edge carries one, is in `time.timestamp`. */
  record(input: number, record: unknown): void | Promise<void>;
  /** The task's input watermark advanced (never to +Infinity: the end of the input is `end`); null for a task that makes its own. */
  watermark: ((watermark: number, origin: number) => void | Promise<void>) | null;
  /** Every input channel still open went idle, or one became active again. */
  status(idle: boolean): void | Promise<void>;
  /** A latency marker made by a source at wall-clock time `origin` reached this task. */
  latencyMarker(origin: number): void | Promise<void>;
}

/**
 * A task whose input never runs dry lets its event loop run at least this often (ms,
 * between buffers): its state writes, reports, credit announcements and mail come as
 * events, which a loop that always has a buffer to read would starve.
 */
const INPUT_YIELD_INTERVAL_MS = 20;

/** How a task takes part in checkpoints: what it does at its barriers, and how long an aligned one may wait. */
export interface StreamCheckpoints {
  actions: CheckpointActions;
  alignmentTimeoutMs?: number;
  /** In-flight records an unaligned checkpoint stored, restoring: read before any new input. */
  replay: readonly ChannelState[];
  /** The buffers its barriers overtook at this task's channels, restoring: read next, each channel's reader as it was then. */
  overtaken: readonly InputInFlight[];
}

/** One input of a task: its gate, and whether each record on it comes with its event timestamp before it. */
export interface StreamInputGate {
  gate: InputGate;
  timestamped: boolean;
}

/**
 * Reads all of a task's inputs at once (Flink's StreamInputProcessor): the gates in
 * turn, one buffer at a time, records through one deserializer per channel (records
 * span a channel's buffers), events in their place between them. The watermarks of
 * every channel of every input meet in one valve, whose output is the task's
 * watermark; the task's mail runs between buffers, and while it waits for input.
 */
export class StreamInput {
  private readonly deserializers: RecordDeserializer[][];
  /** Where gate g's channels start in the valve's numbering. */
  private readonly offsets: number[] = [];
  private readonly valve: WatermarkValve;
  private readonly barriers: BarrierHandler | null;
  private idle = false;
  recordsIn = 0;
  bytesIn = 0;

  constructor(
    private readonly inputs: readonly StreamInputGate[],
    private readonly handler: InputHandler,
    private readonly time: TaskTime,
    private readonly mailbox: Mailbox,
    private readonly checkpoints?: StreamCheckpoints,
  ) {
    let channels = 0;
    for (const { gate } of inputs) {
      this.offsets.push(channels);
      channels += gate.numberOfChannels;
    }
    this.valve = new WatermarkValve(channels);
    this.deserializers = inputs.map(({ gate }) => Array.from({ length: gate.numberOfChannels }, () => new RecordDeserializer()));
    const gates = inputs.map(({ gate }) => gate);
    this.barriers = checkpoints ? new BarrierHandler(gates, checkpoints.actions, checkpoints.alignmentTimeoutMs, () => mailbox.put(() => undefined)) : null;
  }

  /** Time spent waiting for input, ms. */
  get idleMs(): number {
    return this.inputs.reduce((sum, { gate }) => sum + gate.idleMs, 0);
  }

  /** Reads until every channel of every input has ended. */
  async run(): Promise<void> {
    const gates = this.inputs.map(({ gate }) => gate);
    for (const gate of gates) gate.requestPartitions();
    try {
      await this.replay();
      let turn = 0;
      let yielded = performance.now();
      for (;;) {
        if (performance.now() - yielded > INPUT_YIELD_INTERVAL_MS) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          yielded = performance.now();
        }
        if (this.mailbox.hasMail) await this.mailbox.runAll();
        if (this.barriers !== null) await this.barriers.poll();
        const g = this.nextReady(turn);
        if (g < 0) {
          if (gates.every((gate) => gate.isFinished)) break;
          await Promise.race([...gates.filter((gate) => !gate.isFinished).map((gate) => gate.waitForData()), this.mailbox.whenMail()]);
          // Closed while waiting (its task was canceled): nothing more comes, and it is not the end of the input.
          if (gates.some((gate) => gate.isClosed)) throw new SpillwayError('SPW_ERR_TASK_CANCELED', 'an input gate was closed before its input ended');
          continue;
        }
        turn = g + 1;
        const gate = gates[g];
        const buffer = gate.pollNextAny();
        if (buffer === null) continue;
        const waiting = buffer.isEvent ? this.onEvent(g, gate.lastChannel, buffer) : this.onData(g, gate.lastChannel, buffer);
        if (waiting) await waiting;
      }
      this.checkComplete();
    } finally {
      this.barriers?.close();
      for (const row of this.deserializers) for (const deserializer of row) deserializer.clear();
      for (const gate of gates) gate.close();
    }
  }

  /**
   * What an unaligned checkpoint stored for this task's channels, into the chain before
   * anything new: the records read before their barrier came, then the buffers the
   * barriers overtook, each channel's reader as it was then. What the producers stored
   * comes next on each channel, read by the same reader.
   */
  private async replay(): Promise<void> {
    for (const { input, records } of this.checkpoints?.replay ?? []) {
      const timestamped = this.inputs[input].timestamped;
      for (let i = 0; i < records.length; i += timestamped ? 2 : 1) {
        if (timestamped) this.time.timestamp = records[i] as number;
        const waiting = this.handler.record(input, records[timestamped ? i + 1 : i]);
        if (waiting) await waiting;
      }
    }
    for (const { input, channel, reader, buffers } of this.checkpoints?.overtaken ?? []) {
      const deserializer = RecordDeserializer.restored(reader);
      this.deserializers[input][channel] = deserializer;
      for (const bytes of buffers) {
        deserializer.setNextBuffer(unpooledBuffer(Buffer.from(bytes), DataType.DATA));
        const waiting = this.inputs[input].timestamped ? this.readTimestamped(input, deserializer) : this.read(input, deserializer);
        if (waiting) await waiting;
      }
    }
  }

  /** The first gate from `from` on, in turn, that has a buffer now; -1 if none has. */
  private nextReady(from: number): number {
    const n = this.inputs.length;
    for (let i = 0; i < n; i++) {
      const g = (from + i) % n;
      if (this.inputs[g].gate.hasData) return g;
    }
    return -1;
  }

  private onData(g: number, channel: number, buffer: NetworkBuffer): void | Promise<void> {
    this.valve.onRecord(this.offsets[g] + channel);
    if (this.idle && !this.valve.isIdle) return this.setIdle(false).then(() => this.onData(g, channel, buffer));
    const deserializer = this.deserializers[g][channel];
    this.bytesIn += buffer.size;
    deserializer.setNextBuffer(buffer);
    if (this.barriers?.recording(g, channel)) return this.readRecording(g, channel, deserializer, buffer.size);
    return this.inputs[g].timestamped ? this.readTimestamped(g, deserializer) : this.read(g, deserializer);
  }

  /** Reads a buffer whose records an unaligned checkpoint stores too (each after its timestamp on an edge of event time). */
  private async readRecording(g: number, channel: number, deserializer: RecordDeserializer, bytes: number): Promise<void> {
    const timestamped = this.inputs[g].timestamped;
    const stored: unknown[] = [];
    for (let value = deserializer.next(); value !== NEED_MORE; value = deserializer.next()) {
      let record = value;
      if (timestamped) {
        record = deserializer.next();
        if (record === NEED_MORE || typeof value !== 'number') throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', 'a timestamped record stream lost its pairing of timestamp and record');
        this.time.timestamp = value;
        stored.push(value);
      }
      stored.push(record);
      this.recordsIn++;
      const waiting = this.handler.record(g, record);
      if (waiting) await waiting;
    }
    this.barriers!.recorded(g, channel, stored, bytes);
  }

  private read(g: number, deserializer: RecordDeserializer): void | Promise<void> {
    const handler = this.handler;
    for (let record = deserializer.next(); record !== NEED_MORE; record = deserializer.next()) {
      this.recordsIn++;
      const waiting = handler.record(g, record);
      if (waiting) return waiting.then(() => this.read(g, deserializer));
    }
  }

  private readTimestamped(g: number, deserializer: RecordDeserializer): void | Promise<void> {
    const handler = this.handler;
    const time = this.time;
    for (let timestamp = deserializer.next(); timestamp !== NEED_MORE; timestamp = deserializer.next()) {
      const record = deserializer.next();
      if (record === NEED_MORE || typeof timestamp !== 'number') throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', 'a timestamped record stream lost its pairing of timestamp and record');
      this.recordsIn++;
      time.timestamp = timestamp;
      const waiting = handler.record(g, record);
      if (waiting) return waiting.then(() => this.readTimestamped(g, deserializer));
    }
  }

  private onEvent(g: number, channel: number, buffer: NetworkBuffer): void | Promise<void> {
    const event = eventOf(buffer);
    buffer.recycle();
    const c = this.offsets[g] + channel;
    switch (event.type) {
      case EventType.WATERMARK:
        return this.advanced(this.valve.onWatermark(c, event.timestamp, event.origin));
      case EventType.STREAM_STATUS:
        return this.advanced(this.valve.onStatus(c, event.idle));
      case EventType.END_OF_PARTITION: {
        if (this.deserializers[g][channel].hasPartialRecord) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `channel ${channel} of input ${g} ended in the middle of a record`);
        const ended = this.barriers?.onEnd(g, channel);
        if (ended) return ended.then(() => this.advanced(this.valve.onEnd(c)));
        return this.advanced(this.valve.onEnd(c));
      }
      case EventType.CHECKPOINT_BARRIER: {
        const overtaken = this.inputs[g].gate.takeOvertaken(channel);
        return this.barriers?.onBarrier(g, channel, event, overtaken, () => this.deserializers[g][channel].state());
      }
      case EventType.CANCEL_CHECKPOINT:
        return this.barriers?.onCancel(event.id);
      case EventType.LATENCY_MARKER:
        return this.handler.latencyMarker(event.origin);
      default:
        return undefined;
    }
  }

  /**
   * Passes a watermark that advanced on (the end of every input is the end, not a watermark), and a
   * change of idleness: going active before the watermark, going idle after it (the valve's flush
   * as its last channel went idle), since a watermark downstream makes a channel active again.
   */
  private advanced(watermark: number | null): void | Promise<void> {
    const idle = this.valve.isIdle;
    if (idle !== this.idle) {
      if (!idle) return this.setIdle(false).then(() => this.advanced(watermark));
      const passed = this.passWatermark(watermark);
      return passed ? passed.then(() => this.setIdle(true)) : this.setIdle(true);
    }
    return this.passWatermark(watermark);
  }

  private passWatermark(watermark: number | null): void | Promise<void> {
    const handle = this.handler.watermark;
    if (watermark === null || watermark === Number.POSITIVE_INFINITY || handle === null) return;
    this.time.watermark = watermark;
    return handle(watermark, this.valve.origin);
  }

  private async setIdle(idle: boolean): Promise<void> {
    this.idle = idle;
    await this.handler.status(idle);
  }

  private checkComplete(): void {
    this.deserializers.forEach((row, g) => {
      const broken = row.findIndex((d) => d.hasPartialRecord);
      if (broken >= 0) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `channel ${broken} of input ${g} ended in the middle of a record`);
    });
  }
}

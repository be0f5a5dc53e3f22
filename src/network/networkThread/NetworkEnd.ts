import type { BufferPool } from '../buffer/BufferPool.js';
import { DataType, unpooledBuffer, type NetworkBuffer } from '../buffer/NetworkBuffer.js';
import type { SegmentArena } from '../buffer/NetworkBufferPool.js';
import { BufferQueue } from '../buffer/BufferQueue.js';
import type { ChannelAvailability, InputChannel } from '../InputChannel.js';
import { LocalInputChannel } from './consumer/LocalInputChannel.js';
import type { PartitionBufferStats, ResultPartition } from './partition/ResultPartition.js';
import { isEndOfPartition } from '../Events.js';
import type { ChannelSource, ShuffleEnvironment } from './ShuffleEnvironment.js';
import { decodeBytes, decodeError, encodeBytes, encodeError, type EntrySink, Op } from '../handover/Handover.js';
import { deserializeError, SpillwayError } from '../../errors/Errors.js';

/** The subpartition operand of a broadcast buffer. */
const BROADCAST = -1;

/** What the network end asks of the process that runs the task. */
export interface NetworkEndListener {
  /** The task starts reading input `gate`: call attachInput() once its producers are known. */
  inputRequested(gate: number): void;
  /** A partition the task finished is readable (a blocking one: its files are written). */
  partitionFinished(partition: number): void;
  /**
   * An unaligned barrier went ahead of what partition `partition` had queued: copies of
   * the data buffers it overtook, by subpartition (none if the partition failed), for the
   * task's snapshot. One answer for each PRIORITY_EVENT, in order.
   */
  overtaken(partition: number, buffers: Buffer[][]): void;
}

/** Where a task's buffers are now: per output partition, and per input those lent to the task (and how many of them from local producers). */
export interface TaskBufferStats {
  outputs: PartitionBufferStats[];
  inputs: { lent: number; lentLocal: number; poolUsed: number; poolMax: number }[];
}

/** An input buffer in the task thread's hands. */
interface Loan {
  buffer: NetworkBuffer;
  gate: number;
  local: boolean;
}

/** One input of the task as the network thread serves it. */
interface GateState {
  pool: BufferPool;
  channels: InputChannel[];
  forwarder: Forwarder | null;
}

/**
 * The network thread's end of one task thread: it owns the task's partitions, the
 * pools of its inputs and the real channels (local and remote), and moves buffers
 * by index (see Handover.ts). It knows at every moment which buffers are in the
 * task thread's hands, granted to fill or lent to read, so that reclaim() can take
 * them all back from a thread that was terminated.
 */
export class NetworkEnd {
  /** Segments granted to the task's writers, by segment index. */
  private readonly granted = new Map<number, NetworkBuffer>();
  /** Input buffers lent to the task, by loan. */
  private readonly lent = new Map<number, Loan>();
  private nextLoan = 0;
  /** Per partition: buffers wanted and not yet granted, and whether a wait for one is under way. */
  private readonly wanted: number[];
  /** Per partition: buffers granted and not yet handed back. */
  private readonly grantedCount: number[];
  private readonly waiting: boolean[];
  private readonly gates: GateState[];
  private closed = false;

  constructor(
    private readonly env: ShuffleEnvironment,
    private readonly port: EntrySink,
    private readonly partitions: readonly ResultPartition[],
    gateChannels: readonly number[],
    name: string,
    private readonly listener: NetworkEndListener,
  ) {
    this.wanted = partitions.map(() => 0);
    this.grantedCount = partitions.map(() => 0);
    this.waiting = partitions.map(() => false);
    this.gates = [];
    partitions.forEach((partition, p) => {
      partition.pool.onOverLimit = () => {
        if (this.grantedCount[p] > 0 && !this.closed) this.port.add([Op.REVOKE, p]);
      };
    });
    try {
      gateChannels.forEach((channels, g) => this.gates.push({ pool: env.reserveGatePool(channels, `${name}#${g}`), channels: [], forwarder: null }));
    } catch (error) {
      for (const gate of this.gates) gate.pool.destroy();
      throw error;
    }
  }

  private get arena(): SegmentArena {
    return this.env.buffers.arena;
  }

  /** Applies a batch of entries from the task thread. */
  handle(entries: readonly number[]): void {
    for (let i = 0; i < entries.length; ) {
      const op = entries[i] as Op;
      switch (op) {
        case Op.BUFFER:
          this.onBuffer(entries[i + 1], entries[i + 2], entries[i + 3], entries[i + 4], entries[i + 5] === 1);
          i += 6;
          break;
        case Op.BROADCAST:
          this.onBuffer(entries[i + 1], BROADCAST, entries[i + 2], entries[i + 3], entries[i + 4] === 1);
          i += 5;
          break;
        case Op.EVENT_OUT: {
          const [bytes, next] = decodeBytes(entries, i + 3);
          this.onEvent(entries[i + 1], entries[i + 2], bytes);
          i = next;
          break;
        }
        case Op.PRIORITY_EVENT: {
          const [bytes, next] = decodeBytes(entries, i + 2);
          this.onPriorityEvent(entries[i + 1], bytes);
          i = next;
          break;
        }
        case Op.RECYCLE:
          this.onRecycle(entries[i + 1]);
          i += 2;
          break;
        case Op.WANT:
          this.wanted[entries[i + 1]] += entries[i + 2];
          this.grantWanted(entries[i + 1]);
          i += 3;
          break;
        case Op.UNUSED:
          this.takeBack(entries[i + 1], entries[i + 2])?.recycle();
          i += 3;
          break;
        case Op.FINISH:
          this.onFinish(entries[i + 1]);
          i += 2;
          break;
        case Op.RELEASE: {
          const [cause, next] = decodeError(entries, i + 2);
          this.releasePartition(entries[i + 1], cause === null ? new SpillwayError('SPW_ERR_PARTITION_RELEASED', 'the task released it') : deserializeError(cause));
          i = next;
          break;
        }
        case Op.OPEN:
          this.listener.inputRequested(entries[i + 1]);
          i += 2;
          break;
        case Op.CLOSE:
          this.closeGate(entries[i + 1]);
          i += 2;
          break;
        default:
          throw new SpillwayError('SPW_ERR_INTERNAL', `unknown handover entry ${op} from a task thread`);
      }
    }
  }

  /** Creates the channels of an input the task asked for; the pool reserved for it shrinks to the remote ones. */
  attachInput(g: number, sources: ChannelSource[]): void {
    const gate = this.gates[g];
    if (this.closed || gate.forwarder !== null) return;
    const forwarder = new Forwarder(g, this);
    gate.forwarder = forwarder;
    gate.channels = this.env.createInputChannels(sources, forwarder, gate.pool);
    forwarder.channels = gate.channels;
    for (const channel of gate.channels) channel.requestSubpartition();
  }

  /**
   * The task thread is gone or done: every buffer it held returns to its pool,
   * waits for buffers end and every input is released. Its partitions stay; the
   * caller releases them if the task did not finish.
   */
  reclaim(): void {
    if (this.closed) return;
    this.closed = true;
    for (const buffer of this.granted.values()) buffer.recycle();
    this.granted.clear();
    for (const loan of this.lent.values()) loan.buffer.recycle();
    this.lent.clear();
    for (let g = 0; g < this.gates.length; g++) this.closeGate(g);
    for (const partition of this.partitions) partition.pool.onOverLimit = null;
  }

  /**
   * Sends a lent input buffer, or an event, in the order its channel produced them;
   * true if it was the channel's last (end of partition), after which the channel
   * is released and must not be polled again.
   */
  forward(g: number, channel: number, buffer: NetworkBuffer): boolean {
    if (buffer.isEvent) {
      const last = isEndOfPartition(buffer);
      this.port.add([Op.EVENT, g, channel, ...encodeBytes(buffer.bytes())]);
      buffer.recycle();
      if (!last) return false;
      this.gates[g].channels[channel].release();
      return true;
    }
    const segment = this.arena.indexOf(buffer.segment);
    if (segment < 0) {
      buffer.recycle();
      throw new SpillwayError('SPW_ERR_INTERNAL', `channel ${channel} of input ${g} delivered a buffer outside network memory`);
    }
    const loan = this.nextLoan++;
    this.lent.set(loan, { buffer, gate: g, local: this.gates[g].channels[channel] instanceof LocalInputChannel });
    this.port.add([Op.INPUT, g, channel, loan, segment, buffer.size, buffer.compressed ? 1 : 0]);
    return false;
  }

  /** Where the task's buffers are now; counts the loans, so call it per report, not per buffer. */
  bufferStats(): TaskBufferStats {
    const inputs = this.gates.map(({ pool }) => ({ lent: 0, lentLocal: 0, poolUsed: pool.isDestroyed ? 0 : pool.buffersInUse, poolMax: pool.isDestroyed ? 0 : pool.max }));
    for (const { gate, local } of this.lent.values()) {
      inputs[gate].lent++;
      if (local) inputs[gate].lentLocal++;
    }
    return { outputs: this.partitions.map((partition, p) => partition.bufferStats(this.grantedCount[p])), inputs };
  }

  failChannel(g: number, channel: number, error: unknown): void {
    this.port.add([Op.CHANNEL_ERROR, g, channel, ...encodeError(error, 'SPW_ERR_CONNECTION_LOST')]);
  }

  private onBuffer(p: number, subpartition: number, segment: number, size: number, compressed: boolean): void {
    const buffer = this.takeBack(p, segment);
    if (buffer === undefined) return;
    buffer.size = size;
    buffer.compressed = compressed;
    try {
      if (subpartition === BROADCAST) this.partitions[p].broadcast(buffer);
      else this.partitions[p].add(buffer, subpartition);
    } catch (error) {
      this.port.add([Op.PARTITION_ERROR, p, ...encodeError(error, 'SPW_ERR_PARTITION_RELEASED')]);
      return;
    }
    // A writer that waits may now be served, by a spill if need be.
    if (this.wanted[p] > 0) this.grantWanted(p);
  }

  /** An event for one subpartition or every one: a buffer of its own each, so each queue keeps its order. */
  private onEvent(p: number, subpartition: number, bytes: Buffer): void {
    const partition = this.partitions[p];
    try {
      if (subpartition !== BROADCAST) partition.add(unpooledBuffer(bytes, DataType.EVENT), subpartition);
      else for (let s = 0; s < partition.numSubpartitions; s++) partition.add(unpooledBuffer(bytes, DataType.EVENT), s);
    } catch (error) {
      this.port.add([Op.PARTITION_ERROR, p, ...encodeError(error, 'SPW_ERR_PARTITION_RELEASED')]);
    }
  }

  private onPriorityEvent(p: number, bytes: Buffer): void {
    let overtaken: Buffer[][] = [];
    try {
      overtaken = this.partitions[p].addPriorityEvent(bytes);
    } catch (error) {
      this.port.add([Op.PARTITION_ERROR, p, ...encodeError(error, 'SPW_ERR_PARTITION_RELEASED')]);
    }
    this.listener.overtaken(p, overtaken);
  }

  private takeBack(p: number, segment: number): NetworkBuffer | undefined {
    const buffer = this.granted.get(segment);
    if (buffer === undefined) return undefined;
    this.granted.delete(segment);
    this.grantedCount[p]--;
    return buffer;
  }

  private onRecycle(loan: number): void {
    const lent = this.lent.get(loan);
    if (lent === undefined) return;
    this.lent.delete(loan);
    lent.buffer.recycle();
  }

  private onFinish(p: number): void {
    this.partitions[p].finish().then(
      () => {
        this.port.add([Op.FINISHED, p, ...encodeError(null, 'SPW_ERR_PARTITION_IO')]);
        this.listener.partitionFinished(p);
      },
      (error: Error) => this.port.add([Op.FINISHED, p, ...encodeError(error, 'SPW_ERR_PARTITION_IO')]),
    );
  }

  private releasePartition(p: number, cause: Error): void {
    this.wanted[p] = 0;
    this.env.partitions.release(this.partitions[p].id, cause);
  }

  /** Grants the buffers the task wants as far as the pool has them; waits for one when it has none. */
  private grantWanted(p: number): void {
    const partition = this.partitions[p];
    while (this.wanted[p] > 0 && !this.closed && !partition.isReleased) {
      const buffer = partition.pool.requestBuffer();
      if (buffer === null) {
        this.awaitGrant(p);
        return;
      }
      this.grant(p, buffer);
    }
  }

  private awaitGrant(p: number): void {
    const partition = this.partitions[p];
    // A blocking partition frees memory only by spilling what it keeps; what it keeps grows with every buffer handed over.
    partition.onPoolExhausted();
    if (this.waiting[p]) return;
    this.waiting[p] = true;
    partition.pool.requestBufferAsync().then(
      (buffer) => {
        this.waiting[p] = false;
        if (this.closed || partition.isReleased || this.wanted[p] === 0) buffer.recycle();
        else {
          this.grant(p, buffer);
          this.grantWanted(p);
        }
      },
      () => {
        // The pool was destroyed with its partition: the task learns it from its next write.
        this.waiting[p] = false;
      },
    );
  }

  private grant(p: number, buffer: NetworkBuffer): void {
    const segment = this.arena.indexOf(buffer.segment);
    this.granted.set(segment, buffer);
    this.grantedCount[p]++;
    this.wanted[p]--;
    this.port.add([Op.GRANT, p, segment, this.partitions[p].pool.buffersInUse - this.grantedCount[p]]);
  }

  private closeGate(g: number): void {
    const gate = this.gates[g];
    gate.forwarder?.close();
    for (const channel of gate.channels) channel.release();
    gate.channels = [];
    gate.pool.destroy();
  }
}

/**
 * Passes the buffers of one input's channels to the task thread as they arrive,
 * in each channel's order; the task thread's InputGate does the fair merging.
 */
class Forwarder implements ChannelAvailability {
  channels: InputChannel[] = [];
  private readonly ready = new BufferQueue<InputChannel>();
  private readonly queued = new Set<number>();
  /** Channels that ended or failed: never polled again. */
  private readonly done = new Set<number>();
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly gate: number,
    private readonly end: NetworkEnd,
  ) {}

  notifyChannelNonEmpty(channel: InputChannel): void {
    if (this.closed || this.queued.has(channel.channelIndex)) return;
    this.queued.add(channel.channelIndex);
    this.ready.push(channel);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.drain());
    }
  }

  close(): void {
    this.closed = true;
    this.ready.drain();
  }

  private drain(): void {
    this.scheduled = false;
    for (let channel = this.ready.shift(); channel !== undefined && !this.closed; channel = this.ready.shift()) {
      const index = channel.channelIndex;
      this.queued.delete(index);
      if (this.done.has(index)) continue;
      try {
        for (let buffer = channel.pollNext(); buffer !== null && !this.closed; buffer = channel.pollNext()) {
          if (!this.end.forward(this.gate, index, buffer)) continue;
          this.done.add(index);
          break;
        }
      } catch (error) {
        this.done.add(index);
        this.end.failChannel(this.gate, index, error);
      }
    }
  }
}

import type { CompressionCodec } from '../buffer/CompressionCodec.js';
import { DataType, NetworkBuffer, unpooledBuffer, type BufferRecycler } from '../buffer/NetworkBuffer.js';
import { SegmentArena, type SharedSegments } from '../buffer/NetworkBufferPool.js';
import { InputGate } from './consumer/InputGate.js';
import type { SubpartitionAddress } from '../InputChannel.js';
import { decodeBytes, decodeError, Op, type HandoverPort } from '../handover/Handover.js';
import { ThreadBufferPool } from './ThreadBufferPool.js';
import { ThreadInputChannel } from './ThreadInputChannel.js';
import { ThreadResultPartition } from './ThreadResultPartition.js';
import { SpillwayError } from '../../errors/Errors.js';

/** What a task thread needs to know of one output partition. */
export interface ThreadPartitionSpec {
  id: string;
  numSubpartitions: number;
  /** The codec of its buffers (the edge asked for it and its type allows it), or null. */
  compression: CompressionCodec | null;
}

/**
 * The task thread's end of the handover (see Handover.ts): partitions to write and
 * input gates to read, whose buffers are segments of the shared network memory
 * that the network thread grants and lends by index.
 */
export class TaskEnd {
  private readonly arena: SegmentArena;
  private readonly partitions: ThreadResultPartition[];
  private readonly gates: ThreadInputChannel[][] = [];

  constructor(
    readonly port: HandoverPort,
    shared: SharedSegments | SegmentArena,
    outputs: readonly ThreadPartitionSpec[],
  ) {
    this.arena = shared instanceof SegmentArena ? shared : new SegmentArena(shared);
    this.partitions = outputs.map(
      (spec, p) => new ThreadResultPartition(this.port, p, spec.id, spec.numSubpartitions, new ThreadBufferPool(this.port, p, this.arena), spec.compression),
    );
  }

  partition(index: number): ThreadResultPartition {
    return this.partitions[index];
  }

  /**
   * A gate over input g: its channels read through the network thread, which is
   * asked to open them when the gate requests its partitions.
   */
  inputGate(g: number, addresses: readonly SubpartitionAddress[]): InputGate {
    const gate = new InputGate();
    let requested = false;
    let open = addresses.length;
    const channels = addresses.map(
      (address, c) =>
        new ThreadInputChannel(
          c,
          address,
          gate,
          () => {
            if (requested) return;
            requested = true;
            this.port.add([Op.OPEN, g]);
          },
          () => {
            if (--open === 0 && requested) this.port.add([Op.CLOSE, g]);
          },
        ),
    );
    this.gates[g] = channels;
    gate.setChannels(channels);
    return gate;
  }

  /** Applies a batch of entries from the network thread. */
  handle(entries: readonly number[]): void {
    for (let i = 0; i < entries.length; ) {
      const op = entries[i] as Op;
      switch (op) {
        case Op.INPUT:
          this.onInput(entries[i + 1], entries[i + 2], entries[i + 3], entries[i + 4], entries[i + 5], entries[i + 6] === 1);
          i += 7;
          break;
        case Op.GRANT:
          this.partitions[entries[i + 1]].pool.granted(entries[i + 2], entries[i + 3]);
          i += 4;
          break;
        case Op.EVENT: {
          const [bytes, next] = decodeBytes(entries, i + 3);
          this.gates[entries[i + 1]][entries[i + 2]].deliver(unpooledBuffer(bytes, DataType.EVENT));
          i = next;
          break;
        }
        case Op.CHANNEL_ERROR: {
          const [error, next] = decodeError(entries, i + 3);
          this.gates[entries[i + 1]][entries[i + 2]].fail(error ?? { code: 'SPW_ERR_CONNECTION_LOST', message: 'the channel failed' });
          i = next;
          break;
        }
        case Op.FINISHED: {
          const [error, next] = decodeError(entries, i + 2);
          this.partitions[entries[i + 1]].finished(error);
          i = next;
          break;
        }
        case Op.REVOKE:
          this.partitions[entries[i + 1]].pool.giveBackSpare();
          i += 2;
          break;
        case Op.PARTITION_ERROR: {
          const [error, next] = decodeError(entries, i + 2);
          this.partitions[entries[i + 1]].failed(error ?? { code: 'SPW_ERR_PARTITION_RELEASED', message: 'the partition failed' });
          i = next;
          break;
        }
        default:
          throw new SpillwayError('SPW_ERR_INTERNAL', `unknown handover entry ${op} from the network thread`);
      }
    }
  }

  private onInput(g: number, channel: number, loan: number, segment: number, size: number, compressed: boolean): void {
    const buffer = new NetworkBuffer(this.arena.segment(segment), new Loan(this.port, loan));
    buffer.size = size;
    buffer.compressed = compressed;
    this.gates[g][channel].deliver(buffer);
  }
}

/** Returns a lent buffer to the network thread, which recycles it where it came from. */
class Loan implements BufferRecycler {
  constructor(
    private readonly port: HandoverPort,
    private readonly loan: number,
  ) {}

  recycle(): void {
    this.port.add([Op.RECYCLE, this.loan]);
  }
}

import { NEED_MORE, RecordDeserializer } from '../serialization/RecordDeserializer.js';
import type { InputGate } from './InputGate.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Receives each record; returns a promise only when it must wait (for example on its own writer). */
export type RecordHandler<T> = (record: T, channel: number) => void | Promise<void>;

/** Turns a gate's buffers back into records, with one deserializer per channel since records span a channel's buffers. */
export class RecordReader<T> {
  private readonly deserializers: RecordDeserializer[];
  recordsIn = 0;
  bytesIn = 0;

  constructor(private readonly gate: InputGate) {
    this.deserializers = Array.from({ length: gate.numberOfChannels }, () => new RecordDeserializer());
  }

  /** Time spent waiting for input, ms. */
  get idleMs(): number {
    return this.gate.idleMs;
  }

  /** Reads until every channel has ended, handing each record to the handler in channel order. */
  async forEach(handler: RecordHandler<T>): Promise<void> {
    const gate = this.gate;
    gate.requestPartitions();
    try {
      for (;;) {
        const buffer = gate.pollNextAny();
        if (buffer === null) {
          if (gate.isFinished) break;
          await gate.waitForData();
          // Closed while waiting (its task was canceled): nothing more comes, and it is not the end of the input.
          if (gate.isClosed) throw new SpillwayError('SPW_ERR_TASK_CANCELED', 'the input gate was closed before its input ended');
          continue;
        }
        const channel = gate.lastChannel;
        if (buffer.isEvent) {
          buffer.recycle();
          continue;
        }
        const deserializer = this.deserializers[channel];
        this.bytesIn += buffer.size;
        deserializer.setNextBuffer(buffer);
        for (;;) {
          const record = deserializer.next();
          if (record === NEED_MORE) break;
          this.recordsIn++;
          const waiting = handler(record as T, channel);
          if (waiting) await waiting;
        }
      }
      const broken = this.deserializers.findIndex((d) => d.hasPartialRecord);
      if (broken >= 0) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `channel ${broken} ended in the middle of a record`);
    } finally {
      for (const deserializer of this.deserializers) deserializer.clear();
      gate.close();
    }
  }
}

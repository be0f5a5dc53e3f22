/**
 * Buffers change threads by index: the task thread and the network thread of a
 * TaskManager exchange small integer entries about segments of the shared network
 * memory, never the bytes. Entries are batched into one message per microtask (or
 * per HANDOVER_BATCH numbers), so there is no message per record or per buffer.
 *
 * Every entry is an opcode and its operands; `s` refers to the message's strings.
 *
 * | task thread -> network thread | operands |
 * |---|---|
 * | WANT | partition, count: buffers the writer would like granted |
 * | BUFFER | partition, subpartition, segment, size: a filled buffer, ownership passes |
 * | UNUSED | partition, segment: a granted buffer given back unfilled |
 * | RECYCLE | loan: an input buffer the task is done with |
 * | FINISH | partition: no more buffers; answer FINISHED once readable |
 * | RELEASE | partition, s: the task failed; drop the partition with this cause |
 * | OPEN | gate: the task starts reading this input |
 * | CLOSE | gate: the task stopped reading this input |
 *
 * | network thread -> task thread | operands |
 * |---|---|
 * | GRANT | partition, segment, outside: a buffer of the partition's pool, and how many of its buffers are in use outside the task |
 * | INPUT | gate, channel, loan, segment, size: a data buffer lent to the task; RECYCLE it by its loan |
 * | EVENT | gate, channel, event type |
 * | CHANNEL_ERROR | gate, channel, s |
 * | FINISHED | partition, s or -1: the partition is readable, or why it is not |
 * | PARTITION_ERROR | partition, s: the partition failed (for example its consumer is gone) |
 */
export const enum Op {
  WANT = 1,
  BUFFER = 2,
  UNUSED = 3,
  RECYCLE = 4,
  FINISH = 5,
  RELEASE = 6,
  OPEN = 7,
  CLOSE = 8,
  GRANT = 11,
  INPUT = 12,
  EVENT = 13,
  CHANNEL_ERROR = 14,
  FINISHED = 15,
  PARTITION_ERROR = 16,
}

/** Numbers a batch may hold before it is sent without waiting for the microtask. */
export const HANDOVER_BATCH = 256;

/** A batch of entries as it crosses threads. */
export interface HandoverMessage {
  handover: number[];
  strings: string[];
}

/** The side of a MessagePort or Worker this needs. */
export interface MessageTarget {
  postMessage(message: unknown): void;
}

export function isHandover(message: unknown): message is HandoverMessage {
  return typeof message === 'object' && message !== null && 'handover' in message;
}

/**
 * One direction of the handover: collects entries and sends them in batches. A
 * control message sent through it goes after every entry added before it.
 */
export class HandoverPort {
  private entries: number[] = [];
  private strings: string[] = [];
  private scheduled = false;

  constructor(private readonly target: MessageTarget) {}

  add1(op: Op, a: number): void {
    this.entries.push(op, a);
    this.added();
  }

  add2(op: Op, a: number, b: number): void {
    this.entries.push(op, a, b);
    this.added();
  }

  add3(op: Op, a: number, b: number, c: number): void {
    this.entries.push(op, a, b, c);
    this.added();
  }

  add4(op: Op, a: number, b: number, c: number, d: number): void {
    this.entries.push(op, a, b, c, d);
    this.added();
  }

  add5(op: Op, a: number, b: number, c: number, d: number, e: number): void {
    this.entries.push(op, a, b, c, d, e);
    this.added();
  }

  /** A string for an entry's operand. */
  string(text: string): number {
    return this.strings.push(text) - 1;
  }

  /** Sends a control message after the entries before it. */
  post(message: unknown): void {
    this.flush();
    this.target.postMessage(message);
  }

  flush(): void {
    if (this.entries.length === 0) return;
    const message: HandoverMessage = { handover: this.entries, strings: this.strings };
    this.entries = [];
    this.strings = [];
    this.target.postMessage(message);
  }

  private added(): void {
    if (this.entries.length >= HANDOVER_BATCH) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      // Once per turn of the event loop: every buffer a socket read, a write or a recycle freed in this turn goes in one message.
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }
}

import type { RingWriter } from './SharedRing.js';
import { isErrorCode, serializeError, type ErrorCode, type SerializedError } from '../../errors/Errors.js';

/**
 * Buffers change threads by index: the task thread and the network thread of a
 * TaskManager exchange small integer entries about segments of the shared network
 * memory, never the bytes, through a ring in shared memory: no message per record
 * or per buffer, and no wake-up while both threads are busy.
 *
 * Every entry is an opcode and its operands; `s` is a string operand (encodeString), `e`
 * an error operand: its code and message as two strings, or none (encodeError).
 *
 * | task thread -> network thread | operands |
 * |---|---|
 * | WANT | partition, count: buffers the writer would like granted |
 * | BUFFER | partition, subpartition, segment, size, compressed (0/1): a filled buffer, ownership passes |
 * | BROADCAST | partition, segment, size, compressed (0/1): a filled buffer for every subpartition, ownership passes |
 * | EVENT_OUT | partition, subpartition (-1: every one), length, bytes: an event (Events.ts) behind the buffers before it |
 * | PRIORITY_EVENT | partition, length, bytes: an unaligned checkpoint barrier, ahead of what every subpartition has queued |
 * | UNUSED | partition, segment: a granted buffer given back unfilled |
 * | RECYCLE | loan: an input buffer the task is done with |
 * | FINISH | partition: no more buffers; answer FINISHED once readable |
 * | RELEASE | partition, e: the task failed; drop the partition with this cause |
 * | OPEN | gate: the task starts reading this input |
 * | CLOSE | gate: the task stopped reading this input |
 *
 * | network thread -> task thread | operands |
 * |---|---|
 * | GRANT | partition, segment, outside: a buffer of the partition's pool, and how many of its buffers are in use outside the task |
 * | INPUT | gate, channel, loan, segment, size, compressed (0/1): a data buffer lent to the task; RECYCLE it by its loan |
 * | EVENT | gate, channel, length, bytes: an event (Events.ts), in order with the channel's buffers |
 * | CHANNEL_ERROR | gate, channel, e |
 * | FINISHED | partition, e: the partition is readable (no error), or why it is not |
 * | REVOKE | partition: the pool is above its share while another waits for its minimum; give back the spare buffers |
 * | PARTITION_ERROR | partition, e: the partition failed (for example its consumer is gone) |
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
  BROADCAST = 9,
  EVENT_OUT = 10,
  PRIORITY_EVENT = 18,
  GRANT = 11,
  INPUT = 12,
  EVENT = 13,
  CHANNEL_ERROR = 14,
  FINISHED = 15,
  PARTITION_ERROR = 16,
  REVOKE = 17,
}

/** Ints written before they are published without waiting for the end of the turn. */
export const HANDOVER_BATCH = 32;

/** Longest string operand carried, in UTF-16 units; longer ones are cut. */
const MAX_STRING = 4096;

/** Where entries go: a HandoverPort, or a stand-in for one that is not there yet. */
export interface EntrySink {
  add(entry: number[]): void;
}

/** The side of a MessagePort or Worker that control messages take. */
export interface MessageTarget {
  postMessage(message: unknown): void;
}

/** A string operand: its length (-1 for none), then its UTF-16 units. */
export function encodeString(text: string | null): number[] {
  if (text === null) return [-1];
  const cut = text.length > MAX_STRING ? text.slice(0, MAX_STRING) : text;
  const out = new Array<number>(cut.length + 1);
  out[0] = cut.length;
  for (let i = 0; i < cut.length; i++) out[i + 1] = cut.charCodeAt(i);
  return out;
}

/** A bytes operand: its length, then one int a byte (events are a few bytes). */
export function encodeBytes(bytes: Uint8Array): number[] {
  const out = new Array<number>(bytes.length + 1);
  out[0] = bytes.length;
  for (let i = 0; i < bytes.length; i++) out[i + 1] = bytes[i];
  return out;
}

/** The bytes operand at `at`, and where the entry goes on after it. */
export function decodeBytes(ints: ArrayLike<number>, at: number): [bytes: Buffer, next: number] {
  const length = ints[at];
  const bytes = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) bytes[i] = ints[at + 1 + i];
  return [bytes, at + 1 + length];
}

/** An error operand: its code (`fallback` if it carries none) and message; null for none. */
export function encodeError(error: unknown, fallback: ErrorCode): number[] {
  if (error === null) return encodeString(null);
  const { code, message } = serializeError(error, fallback);
  return [...encodeString(code), ...encodeString(message)];
}

/** The error operand at `at` (null for none), and where the entry goes on after it. */
export function decodeError(ints: ArrayLike<number>, at: number): [error: SerializedError | null, next: number] {
  const [code, next] = decodeString(ints, at);
  if (code === null) return [null, next];
  const [message, end] = decodeString(ints, next);
  return [{ code: isErrorCode(code) ? code : 'SPW_ERR_INTERNAL', message: message ?? '' }, end];
}

/** The string operand at `at`, and where the entry goes on after it. */
export function decodeString(ints: ArrayLike<number>, at: number): [text: string | null, next: number] {
  const length = ints[at];
  if (length < 0) return [null, at + 1];
  let text = '';
  for (let i = 0; i < length; i++) text += String.fromCharCode(ints[at + 1 + i]);
  return [text, at + 1 + length];
}

/**
 * One direction of the handover: entries go into a shared ring (see SharedRing.ts)
 * and are published once per turn of the event loop, or every HANDOVER_BATCH ints,
 * so that whatever a socket read, a write or a recycle freed in one turn goes
 * together. A control message goes after every entry added before it: the reader
 * drains the ring before it handles one.
 */
export class HandoverPort implements EntrySink {
  private pending = 0;
  private scheduled = false;
  private discarded = false;

  constructor(
    private readonly ring: RingWriter,
    private readonly control: MessageTarget,
  ) {}

  add(entry: number[]): void {
    if (this.discarded) return;
    this.ring.write(entry);
    this.pending += entry.length;
    if (this.pending >= HANDOVER_BATCH) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }

  /** Sends a control message after the entries before it. */
  post(message: unknown): void {
    if (this.discarded) return;
    this.flush();
    this.control.postMessage(message);
  }

  flush(): void {
    if (this.pending === 0 || this.discarded) return;
    this.pending = 0;
    this.ring.publish();
  }

  /**
   * The task this port served has ended: nothing more is sent, and what was written
   * but not published is dropped, so that it cannot reach the next task on the ring.
   */
  discard(): void {
    this.discarded = true;
    this.ring.discard();
  }
}

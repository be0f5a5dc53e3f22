import { DataType, NetworkBuffer, unpooledBuffer } from './buffer/NetworkBuffer.js';
import { SpillwayError } from '../errors/Errors.js';

/**
 * What travels on a channel between buffers of records, each event in a buffer of its
 * own marked DataType.EVENT, behind the records written before it (Flink's
 * AbstractEvent). The same bytes on the wire, in memory and between threads:
 *
 * | byte 0 | then | event |
 * |---|---|---|
 * | 0 | (nothing) | END_OF_PARTITION: the producer of the subpartition finished; nothing follows |
 * | 1 | timestamp (f64), origin (f64) | WATERMARK: no record older than `timestamp` (event time, ms) follows; `origin` is the wall-clock time (epoch ms) at which its source made it, for latency |
 * | 2 | idle (u8: 0 or 1) | STREAM_STATUS: the producer went idle (leaves its consumers' watermark minimum) or active again |
 * | 3 | origin (f64) | LATENCY_MARKER: made by a source at wall-clock time `origin`, it follows the records before it to the sinks (Flink's LatencyMarker) |
 * | 4 | id (f64), timestamp (f64), flags (u8: 1 unaligned, 2 savepoint, 4 stop) | CHECKPOINT_BARRIER: everything before it belongs to checkpoint `id`; an unaligned one goes ahead of the buffers queued before it, which are stored with the checkpoint where it overtook them |
 * | 5 | id (f64) | CANCEL_CHECKPOINT: checkpoint `id` is aborted; a consumer aligning it stops |
 *
 * Numbers are big-endian IEEE 754 doubles, so that watermarks of +-Infinity travel too.
 */
export const enum EventType {
  END_OF_PARTITION = 0,
  WATERMARK = 1,
  STREAM_STATUS = 2,
  LATENCY_MARKER = 3,
  CHECKPOINT_BARRIER = 4,
  CANCEL_CHECKPOINT = 5,
}

export type StreamEvent =
  | { type: EventType.END_OF_PARTITION }
  | { type: EventType.WATERMARK; timestamp: number; origin: number }
  | { type: EventType.STREAM_STATUS; idle: boolean }
  | { type: EventType.LATENCY_MARKER; origin: number }
  | ({ type: EventType.CHECKPOINT_BARRIER } & Barrier)
  | { type: EventType.CANCEL_CHECKPOINT; id: number };

/** A checkpoint barrier's fields (CHECKPOINT_BARRIER). */
export interface Barrier {
  id: number;
  /** When the JobManager triggered the checkpoint, epoch ms. */
  timestamp: number;
  /** It overtook the buffers queued before it (FLIP-76's unaligned checkpoint). */
  unaligned: boolean;
  /** A savepoint: kept until the user removes it. */
  savepoint: boolean;
  /** The job stops once the savepoint is taken (stop-with-savepoint). */
  stop: boolean;
}

/** The bytes of an event: its type, then its fields. */
export function encodeEvent(event: StreamEvent): Buffer {
  switch (event.type) {
    case EventType.END_OF_PARTITION:
      return Buffer.of(event.type);
    case EventType.WATERMARK:
      return withDoubles(event.type, [event.timestamp, event.origin]);
    case EventType.STREAM_STATUS:
      return Buffer.of(event.type, event.idle ? 1 : 0);
    case EventType.LATENCY_MARKER:
      return withDoubles(event.type, [event.origin]);
    case EventType.CHECKPOINT_BARRIER: {
      const bytes = withDoubles(event.type, [event.id, event.timestamp], 1);
      bytes[17] = (event.unaligned ? 1 : 0) | (event.savepoint ? 2 : 0) | (event.stop ? 4 : 0);
      return bytes;
    }
    case EventType.CANCEL_CHECKPOINT:
      return withDoubles(event.type, [event.id]);
  }
}

/** The event in `bytes[0, size)`; SPW_ERR_CORRUPT_FRAME if it is not one. */
export function decodeEvent(bytes: Uint8Array, size = bytes.length): StreamEvent {
  const type = size > 0 ? bytes[0] : -1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, size);
  const need = (length: number): void => {
    if (size !== length) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `an event of type ${type} has ${size} bytes, not ${length}`);
  };
  switch (type) {
    case EventType.END_OF_PARTITION:
      need(1);
      return { type };
    case EventType.WATERMARK:
      need(17);
      return { type, timestamp: view.getFloat64(1), origin: view.getFloat64(9) };
    case EventType.STREAM_STATUS:
      need(2);
      return { type, idle: bytes[1] === 1 };
    case EventType.LATENCY_MARKER:
      need(9);
      return { type, origin: view.getFloat64(1) };
    case EventType.CHECKPOINT_BARRIER: {
      need(18);
      const flags = bytes[17];
      return { type, id: view.getFloat64(1), timestamp: view.getFloat64(9), unaligned: (flags & 1) !== 0, savepoint: (flags & 2) !== 0, stop: (flags & 4) !== 0 };
    }
    case EventType.CANCEL_CHECKPOINT:
      need(9);
      return { type, id: view.getFloat64(1) };
    default:
      throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `unknown event type ${type}`);
  }
}

/** An event as a buffer of its own, of no pool. */
export function eventBuffer(event: StreamEvent | EventType.END_OF_PARTITION): NetworkBuffer {
  return unpooledBuffer(encodeEvent(typeof event === 'number' ? { type: event } : event), DataType.EVENT);
}

/** The event an event buffer carries. */
export function eventOf(buffer: NetworkBuffer): StreamEvent {
  if (!buffer.isEvent) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', 'not an event buffer');
  return decodeEvent(buffer.segment, buffer.size);
}

/** Whether an event buffer is an unaligned checkpoint barrier, which goes ahead of the buffers queued before it. */
export function isPriorityEvent(buffer: NetworkBuffer): boolean {
  return buffer.isEvent && buffer.size >= 18 && buffer.segment[0] === EventType.CHECKPOINT_BARRIER && (buffer.segment[17] & 1) !== 0;
}

/** Whether an event buffer is the end of its partition (checked without decoding the rest). */
export function isEndOfPartition(buffer: NetworkBuffer): boolean {
  return buffer.isEvent && buffer.size > 0 && buffer.segment[0] === EventType.END_OF_PARTITION;
}

function withDoubles(type: EventType, values: number[], extra = 0): Buffer {
  const bytes = Buffer.alloc(1 + 8 * values.length + extra);
  bytes[0] = type;
  values.forEach((value, i) => bytes.writeDoubleBE(value, 1 + 8 * i));
  return bytes;
}

import { DataType, NetworkBuffer, unpooledBuffer } from '../buffer/NetworkBuffer.js';

/** Events travel in-band, each in a buffer of its own marked DataType.EVENT. */
export const enum EventType {
  /** The producer of a subpartition finished: nothing follows. */
  END_OF_PARTITION = 0,
}

export function eventBuffer(type: EventType): NetworkBuffer {
  return unpooledBuffer(Buffer.of(type), DataType.EVENT);
}

export function eventTypeOf(buffer: NetworkBuffer): EventType {
  if (!buffer.isEvent || buffer.size < 1) throw new Error('not an event buffer');
  const type = buffer.segment[0];
  if (type !== EventType.END_OF_PARTITION) throw new Error(`unknown event type ${type}`);
  return type;
}

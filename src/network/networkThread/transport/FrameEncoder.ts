import { DataType } from '../../buffer/NetworkBuffer.js';
import { SpillwayError } from '../../../errors/Errors.js';
import {
  ADD_CREDIT_BYTES,
  BUFFER_RESPONSE_FIXED,
  ERROR_RESPONSE_FIXED,
  type ErrorKind,
  FRAME_HEAD_BYTES,
  FrameType,
  HANDSHAKE_BYTES,
  MAGIC,
  MAX_ERROR_MESSAGE_BYTES,
  MAX_PARTITION_ID_BYTES,
  PARTITION_REQUEST_FIXED,
  PROTOCOL_VERSION,
  WireDataType,
} from './Protocol.js';

/** Builds frames; all integers big-endian. The layouts are in PROTOCOL.md. */

export function encodeHandshake(version = PROTOCOL_VERSION): Buffer {
  const frame = Buffer.allocUnsafe(HANDSHAKE_BYTES);
  frame.writeUInt32BE(MAGIC, 0);
  frame.writeUInt16BE(version, 4);
  frame.writeUInt16BE(0, 6);
  return frame;
}

export function encodePartitionRequest(receiverId: number, partitionId: string, subpartition: number, credit: number): Buffer {
  const id = Buffer.from(partitionId, 'utf8');
  if (id.length === 0 || id.length > MAX_PARTITION_ID_BYTES) {
    throw new SpillwayError('SPW_ERR_INTERNAL', `partition id of ${id.length} bytes is outside 1..${MAX_PARTITION_ID_BYTES}`);
  }
  const frame = head(FrameType.PARTITION_REQUEST, PARTITION_REQUEST_FIXED + id.length);
  let at = FRAME_HEAD_BYTES;
  at = frame.writeUInt32BE(receiverId, at);
  at = frame.writeUInt32BE(subpartition, at);
  at = frame.writeUInt32BE(credit, at);
  at = frame.writeUInt16BE(id.length, at);
  id.copy(frame, at);
  return frame;
}

/** Writes the 18 bytes that precede a buffer's payload into target at offset. */
export function writeBufferResponseHeader(
  target: Buffer,
  offset: number,
  receiverId: number,
  sequence: number,
  backlog: number,
  dataType: DataType,
  compressed: boolean,
  payloadBytes: number,
): void {
  target.writeUInt32BE(1 + BUFFER_RESPONSE_FIXED + payloadBytes, offset);
  target[offset + 4] = FrameType.BUFFER_RESPONSE;
  target.writeUInt32BE(receiverId, offset + 5);
  target.writeUInt32BE(sequence, offset + 9);
  target.writeUInt32BE(backlog, offset + 13);
  target[offset + 17] = dataType === DataType.EVENT ? WireDataType.EVENT : compressed ? WireDataType.COMPRESSED_DATA : WireDataType.DATA;
}

/** Writes an AddCredit frame (ADD_CREDIT_BYTES) into target at offset, so that many go out in one write. */
export function writeAddCredit(target: Buffer, offset: number, receiverId: number, credit: number): void {
  target.writeUInt32BE(ADD_CREDIT_BYTES - 4, offset);
  target[offset + 4] = FrameType.ADD_CREDIT;
  target.writeUInt32BE(receiverId, offset + 5);
  target.writeUInt32BE(credit, offset + 9);
}

export function encodeAddCredit(receiverId: number, credit: number): Buffer {
  const frame = Buffer.allocUnsafe(ADD_CREDIT_BYTES);
  writeAddCredit(frame, 0, receiverId, credit);
  return frame;
}

/** An error for one receiver, or for the whole connection (CONNECTION_WIDE); long messages are cut. */
export function encodeErrorResponse(receiverId: number, kind: ErrorKind, message: string): Buffer {
  let text = Buffer.from(message, 'utf8');
  if (text.length > MAX_ERROR_MESSAGE_BYTES) text = text.subarray(0, MAX_ERROR_MESSAGE_BYTES);
  const frame = head(FrameType.ERROR_RESPONSE, ERROR_RESPONSE_FIXED + text.length);
  frame.writeUInt32BE(receiverId, FRAME_HEAD_BYTES);
  frame[FRAME_HEAD_BYTES + 4] = kind;
  text.copy(frame, FRAME_HEAD_BYTES + ERROR_RESPONSE_FIXED);
  return frame;
}

export function encodeCancelPartitionRequest(receiverId: number): Buffer {
  const frame = head(FrameType.CANCEL_PARTITION_REQUEST, 4);
  frame.writeUInt32BE(receiverId, FRAME_HEAD_BYTES);
  return frame;
}

/** An AuthNonce or AuthProof frame carrying `value` (32 bytes). */
export function encodeAuthFrame(type: FrameType.AUTH_NONCE | FrameType.AUTH_PROOF, value: Buffer): Buffer {
  const frame = head(type, value.length);
  value.copy(frame, FRAME_HEAD_BYTES);
  return frame;
}

export function encodeCloseRequest(): Buffer {
  return head(FrameType.CLOSE_REQUEST, 0);
}

/** A frame of the given body size with its length and type written. */
function head(type: FrameType, bodyBytes: number): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEAD_BYTES + bodyBytes);
  frame.writeUInt32BE(1 + bodyBytes, 0);
  frame[4] = type;
  return frame;
}

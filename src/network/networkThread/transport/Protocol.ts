import { MAX_SEGMENT_SIZE } from '../../buffer/NetworkBufferPool.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** "SPWY": the first four bytes each peer sends, so that a stray client is recognised at once. */
export const MAGIC = 0x5350_5759;
export const PROTOCOL_VERSION = 5;
/** Magic (u32), version (u16), reserved (u16, zero). */
export const HANDSHAKE_BYTES = 8;

/** Every frame starts with its length (u32: the bytes that follow it) and its type (u8). */
export const FRAME_HEAD_BYTES = 5;

export const enum FrameType {
  PARTITION_REQUEST = 1,
  BUFFER_RESPONSE = 2,
  ADD_CREDIT = 3,
  ERROR_RESPONSE = 4,
  CANCEL_PARTITION_REQUEST = 5,
  CLOSE_REQUEST = 6,
  /** Authentication: a side's nonce (both directions). */
  AUTH_NONCE = 7,
  /** Authentication: a side's HMAC over the transcript (both directions). */
  AUTH_PROOF = 8,
}

export const FRAME_NAMES: Readonly<Record<number, string>> = {
  [FrameType.PARTITION_REQUEST]: 'PartitionRequest',
  [FrameType.BUFFER_RESPONSE]: 'BufferResponse',
  [FrameType.ADD_CREDIT]: 'AddCredit',
  [FrameType.ERROR_RESPONSE]: 'ErrorResponse',
  [FrameType.CANCEL_PARTITION_REQUEST]: 'CancelPartitionRequest',
  [FrameType.CLOSE_REQUEST]: 'CloseRequest',
  [FrameType.AUTH_NONCE]: 'AuthNonce',
  [FrameType.AUTH_PROOF]: 'AuthProof',
};

/** A BufferResponse's data type byte: what its payload is. */
export const enum WireDataType {
  DATA = 0,
  EVENT = 1,
  /** Records compressed as one block (BufferCodec). */
  COMPRESSED_DATA = 2,
}

/** What an ErrorResponse reports. */
export const enum ErrorKind {
  /** The request or the connection failed for good. */
  FAILURE = 0,
  /** The partition is not registered (yet): the receiver may retry. */
  PARTITION_NOT_FOUND = 1,
  /** The partition was released (its producer failed or its job ended): the receiver fails with SPW_ERR_PARTITION_RELEASED. */
  PARTITION_RELEASED = 2,
}

/** The receiver id of an ErrorResponse about the whole connection. */
export const CONNECTION_WIDE = 0xffff_ffff;

export const MAX_PARTITION_ID_BYTES = 1024;
export const MAX_ERROR_MESSAGE_BYTES = 8192;
/** A payload never exceeds the largest network buffer. */
export const MAX_PAYLOAD_BYTES = MAX_SEGMENT_SIZE;

/** A nonce is 256 random bits; a proof is an HMAC-SHA256. */
export const AUTH_NONCE_BYTES = 32;
export const AUTH_PROOF_BYTES = 32;
/** A peer that has not authenticated this long after it connected is dropped. */
export const AUTH_DEADLINE_MS = 5000;

/** Fixed body fields before the variable part. */
export const PARTITION_REQUEST_FIXED = 14;
export const BUFFER_RESPONSE_FIXED = 13;
export const ERROR_RESPONSE_FIXED = 5;
/** A BufferResponse's head and fixed fields: what precedes its payload. */
export const BUFFER_HEADER_BYTES = FRAME_HEAD_BYTES + BUFFER_RESPONSE_FIXED;
export const ADD_CREDIT_BYTES = FRAME_HEAD_BYTES + 8;

/** Smallest and largest body (bytes after the type) of each frame type; checked before anything is allocated. */
export const BODY_LIMITS: Readonly<Record<number, readonly [number, number]>> = {
  [FrameType.PARTITION_REQUEST]: [PARTITION_REQUEST_FIXED + 1, PARTITION_REQUEST_FIXED + MAX_PARTITION_ID_BYTES],
  [FrameType.BUFFER_RESPONSE]: [BUFFER_RESPONSE_FIXED, BUFFER_RESPONSE_FIXED + MAX_PAYLOAD_BYTES],
  [FrameType.ADD_CREDIT]: [8, 8],
  [FrameType.ERROR_RESPONSE]: [ERROR_RESPONSE_FIXED, ERROR_RESPONSE_FIXED + MAX_ERROR_MESSAGE_BYTES],
  [FrameType.CANCEL_PARTITION_REQUEST]: [4, 4],
  [FrameType.CLOSE_REQUEST]: [0, 0],
  [FrameType.AUTH_NONCE]: [AUTH_NONCE_BYTES, AUTH_NONCE_BYTES],
  [FrameType.AUTH_PROOF]: [AUTH_PROOF_BYTES, AUTH_PROOF_BYTES],
};

/** The largest body a decoder ever gathers in one piece (payloads are streamed, not gathered). */
export const MAX_GATHERED_BODY = Math.max(
  PARTITION_REQUEST_FIXED + MAX_PARTITION_ID_BYTES,
  ERROR_RESPONSE_FIXED + MAX_ERROR_MESSAGE_BYTES,
);

/** Frames a client sends and a server accepts, and the other way round. */
export const CLIENT_FRAMES: readonly FrameType[] = [
  FrameType.PARTITION_REQUEST,
  FrameType.ADD_CREDIT,
  FrameType.CANCEL_PARTITION_REQUEST,
  FrameType.CLOSE_REQUEST,
];
export const SERVER_FRAMES: readonly FrameType[] = [FrameType.BUFFER_RESPONSE, FrameType.ERROR_RESPONSE];
/** Before authentication only 32-byte handshake frames pass (and, to a client, the error that refuses it). */
export const CLIENT_AUTH_FRAMES: readonly FrameType[] = [FrameType.AUTH_NONCE, FrameType.AUTH_PROOF];
export const SERVER_AUTH_FRAMES: readonly FrameType[] = [FrameType.AUTH_NONCE, FrameType.AUTH_PROOF, FrameType.ERROR_RESPONSE];

/** The peer broke the protocol: the connection is closed, only its channels fail. */
export class ProtocolError extends SpillwayError {
  constructor(message: string) {
    super('SPW_ERR_CORRUPT_FRAME', message);
    this.name = 'ProtocolError';
  }
}

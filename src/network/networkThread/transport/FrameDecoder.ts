import { copyBytes } from '../../buffer/Bytes.js';
import { DataType } from '../../buffer/NetworkBuffer.js';
import {
  BODY_LIMITS,
  BUFFER_RESPONSE_FIXED,
  ErrorKind,
  FRAME_HEAD_BYTES,
  FRAME_NAMES,
  FrameType,
  HANDSHAKE_BYTES,
  MAGIC,
  MAX_GATHERED_BODY,
  PARTITION_REQUEST_FIXED,
  PROTOCOL_VERSION,
  ProtocolError,
  WireDataType,
} from './Protocol.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Every frame but BufferResponse, decoded. */
export type ControlFrame =
  | { type: FrameType.PARTITION_REQUEST; receiverId: number; partitionId: string; subpartition: number; credit: number }
  | { type: FrameType.ADD_CREDIT; receiverId: number; credit: number }
  | { type: FrameType.ERROR_RESPONSE; receiverId: number; kind: ErrorKind; message: string }
  | { type: FrameType.CANCEL_PARTITION_REQUEST; receiverId: number }
  | { type: FrameType.CLOSE_REQUEST }
  | { type: FrameType.AUTH_NONCE | FrameType.AUTH_PROOF; value: Buffer };

/** The fixed fields of a BufferResponse; one object per decoder, overwritten by every frame. */
export interface BufferHeader {
  receiverId: number;
  sequence: number;
  backlog: number;
  dataType: DataType;
  /** The payload is a compressed block of records. */
  compressed: boolean;
  /** Payload bytes. */
  size: number;
}

export interface FrameHandler {
  onControlFrame(frame: ControlFrame): void;
  /** Where the payload goes: a buffer of at least header.size bytes, or null to skip it. */
  onBufferHeader(header: BufferHeader): Buffer | null;
  /** The payload of the last header that got a target is complete. */
  onBufferPayload(): void;
}

const enum Phase {
  HANDSHAKE,
  HEAD,
  BODY,
  PAYLOAD,
}

/**
 * Parses frames out of socket chunks as they come. Fixed-size parts are read in
 * place when a chunk holds them whole and gathered in a small scratch buffer when
 * they straddle chunks; a BufferResponse payload is copied straight from the chunk
 * into the buffer the handler names, so nothing is copied twice. Throws a
 * ProtocolError on the first malformed byte; every length is checked before use.
 */
export class FrameDecoder {
  private phase = Phase.HANDSHAKE;
  /** Bytes the current phase needs in one piece. */
  private need = HANDSHAKE_BYTES;
  private readonly scratch = Buffer.allocUnsafe(MAX_GATHERED_BODY);
  private gathered = 0;
  private type = 0;
  private bodyBytes = 0;
  private target: Buffer | null = null;
  private targetOffset = 0;
  private remaining = 0;
  private stopped = false;
  private accepted: boolean[] = [];
  private readonly header: BufferHeader = { receiverId: 0, sequence: 0, backlog: 0, dataType: DataType.DATA, compressed: false, size: 0 };

  constructor(
    private readonly handler: FrameHandler,
    accepts: readonly FrameType[],
  ) {
    this.accept(accepts);
  }

  /** From now on only these frame types are accepted (the set widens once the peer has authenticated). */
  accept(types: readonly FrameType[]): void {
    this.accepted = [];
    for (const type of types) this.accepted[type] = true;
  }

  /** True if the bytes so far end inside the handshake or a frame. */
  get isMidFrame(): boolean {
    return this.gathered > 0 || this.phase === Phase.BODY || this.phase === Phase.PAYLOAD;
  }

  /** The rest of the payload being received is skipped: its target is no longer the receiver's to fill. */
  skipPayload(): void {
    if (this.phase === Phase.PAYLOAD) this.target = null;
  }

  /** Ignores everything after this (the connection is closing). */
  stop(): void {
    this.stopped = true;
  }

  push(chunk: Buffer, start = 0, end = chunk.length): void {
    let at = start;
    while (at < end && !this.stopped) {
      if (this.phase === Phase.PAYLOAD) {
        at = this.copyPayload(chunk, at, end);
        continue;
      }
      const need = this.need;
      if (this.gathered === 0 && end - at >= need) {
        this.parse(chunk, at);
        at += need;
        continue;
      }
      const take = Math.min(need - this.gathered, end - at);
      chunk.copy(this.scratch, this.gathered, at, at + take);
      this.gathered += take;
      at += take;
      if (this.gathered === need) {
        this.gathered = 0;
        this.parse(this.scratch, 0);
      }
    }
  }

  private parse(bytes: Buffer, at: number): void {
    switch (this.phase) {
      case Phase.HANDSHAKE:
        checkHandshake(bytes, at);
        this.expectHead();
        return;
      case Phase.HEAD:
        return this.parseHead(bytes, at);
      case Phase.BODY:
        if (this.type === FrameType.BUFFER_RESPONSE) return this.parseBufferHeader(bytes, at);
        this.expectHead();
        this.handler.onControlFrame(decodeControlFrame(this.type, bytes, at, this.bodyBytes));
    }
  }

  private parseHead(bytes: Buffer, at: number): void {
    const length = bytes.readUInt32BE(at);
    const type = bytes[at + 4];
    const limits = BODY_LIMITS[type];
    if (limits === undefined) throw new ProtocolError(`unknown frame type ${type}`);
    const name = FRAME_NAMES[type];
    if (!this.accepted[type]) throw new ProtocolError(`unexpected ${name} frame from this peer`);
    const body = length - 1;
    if (body < limits[0] || body > limits[1]) {
      throw new ProtocolError(`${name} frame length ${length} is outside ${limits[0] + 1}..${limits[1] + 1}`);
    }
    this.type = type;
    this.bodyBytes = body;
    if (type === FrameType.BUFFER_RESPONSE) this.expect(Phase.BODY, BUFFER_RESPONSE_FIXED);
    else if (body > 0) this.expect(Phase.BODY, body);
    else this.handler.onControlFrame(decodeControlFrame(type, bytes, at, 0));
  }

  private parseBufferHeader(bytes: Buffer, at: number): void {
    const header = this.header;
    header.receiverId = bytes.readUInt32BE(at);
    header.sequence = bytes.readUInt32BE(at + 4);
    header.backlog = bytes.readUInt32BE(at + 8);
    const wireType = bytes[at + 12];
    if (wireType !== WireDataType.DATA && wireType !== WireDataType.EVENT && wireType !== WireDataType.COMPRESSED_DATA) {
      throw new ProtocolError(`unknown buffer data type ${wireType}`);
    }
    header.dataType = wireType === WireDataType.EVENT ? DataType.EVENT : DataType.DATA;
    header.compressed = wireType === WireDataType.COMPRESSED_DATA;
    const size = this.bodyBytes - BUFFER_RESPONSE_FIXED;
    header.size = size;
    this.phase = Phase.PAYLOAD;
    this.remaining = size;
    this.targetOffset = 0;
    const target = this.handler.onBufferHeader(header);
    if (target !== null && target.length < size) throw new SpillwayError('SPW_ERR_INTERNAL', `payload target of ${target.length} bytes for ${size}`);
    this.target = target;
    if (size === 0) this.endPayload();
  }

  private copyPayload(chunk: Buffer, at: number, end: number): number {
    const take = Math.min(this.remaining, end - at);
    if (this.target !== null) copyBytes(chunk, at, this.target, this.targetOffset, take);
    this.targetOffset += take;
    this.remaining -= take;
    if (this.remaining === 0) this.endPayload();
    return at + take;
  }

  private endPayload(): void {
    const delivered = this.target !== null;
    this.target = null;
    this.expectHead();
    if (delivered) this.handler.onBufferPayload();
  }

  private expectHead(): void {
    this.expect(Phase.HEAD, FRAME_HEAD_BYTES);
  }

  private expect(phase: Phase, bytes: number): void {
    this.phase = phase;
    this.need = bytes;
  }
}

function checkHandshake(bytes: Buffer, at: number): void {
  const magic = bytes.readUInt32BE(at);
  if (magic !== MAGIC) throw new ProtocolError(`bad handshake: magic 0x${magic.toString(16).padStart(8, '0')} is not 0x${MAGIC.toString(16)}`);
  const version = bytes.readUInt16BE(at + 4);
  if (version !== PROTOCOL_VERSION) throw new ProtocolError(`bad handshake: protocol version ${version}, this peer speaks ${PROTOCOL_VERSION}`);
}

function decodeControlFrame(type: number, bytes: Buffer, at: number, bodyBytes: number): ControlFrame {
  switch (type) {
    case FrameType.PARTITION_REQUEST: {
      const idBytes = bytes.readUInt16BE(at + 12);
      if (idBytes !== bodyBytes - PARTITION_REQUEST_FIXED) {
        throw new ProtocolError(`PartitionRequest partition id of ${idBytes} bytes in a body of ${bodyBytes}`);
      }
      return {
        type,
        receiverId: bytes.readUInt32BE(at),
        subpartition: bytes.readUInt32BE(at + 4),
        credit: bytes.readUInt32BE(at + 8),
        partitionId: bytes.toString('utf8', at + PARTITION_REQUEST_FIXED, at + bodyBytes),
      };
    }
    case FrameType.ADD_CREDIT:
      return { type, receiverId: bytes.readUInt32BE(at), credit: bytes.readUInt32BE(at + 4) };
    case FrameType.ERROR_RESPONSE: {
      const kind = bytes[at + 4];
      if (kind !== ErrorKind.FAILURE && kind !== ErrorKind.PARTITION_NOT_FOUND && kind !== ErrorKind.PARTITION_RELEASED) throw new ProtocolError(`unknown error kind ${kind}`);
      return { type, receiverId: bytes.readUInt32BE(at), kind, message: bytes.toString('utf8', at + 5, at + bodyBytes) };
    }
    case FrameType.CANCEL_PARTITION_REQUEST:
      return { type, receiverId: bytes.readUInt32BE(at) };
    case FrameType.CLOSE_REQUEST:
      return { type };
    case FrameType.AUTH_NONCE:
    case FrameType.AUTH_PROOF:
      // A copy: the bytes may be the decoder's scratch buffer or a reused read buffer.
      return { type, value: Buffer.from(bytes.subarray(at, at + bodyBytes)) };
    default:
      throw new ProtocolError(`unknown frame type ${type}`);
  }
}

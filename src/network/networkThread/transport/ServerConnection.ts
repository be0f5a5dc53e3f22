import type net from 'node:net';
import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { BufferQueue } from '../../buffer/BufferQueue.js';
import { isEndOfPartition } from '../../Events.js';
import { PartitionReleasedError } from '../partition/ResultSubpartition.js';
import { PartitionNotFoundError, type ResultPartitionManager } from '../partition/ResultPartitionManager.js';
import { FrameDecoder, type BufferHeader, type ControlFrame, type FrameHandler } from './FrameDecoder.js';
import { encodeErrorResponse, encodeHandshake, writeBufferResponseHeader } from './FrameEncoder.js';
import { AuthenticationError, ServerHandshake } from './Handshake.js';
import {
  AUTH_DEADLINE_MS,
  BUFFER_HEADER_BYTES,
  CLIENT_AUTH_FRAMES,
  CLIENT_FRAMES,
  CONNECTION_WIDE,
  ErrorKind,
  FrameType,
  ProtocolError,
} from './Protocol.js';
import { SubpartitionReader } from './SubpartitionReader.js';
import { networkCounters } from '../NetworkCounters.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Buffers and bytes one flush puts into one writev at most. */
const MAX_BATCH_BUFFERS = 64;
const MAX_BATCH_BYTES = 1 << 20;
/** Bytes queued in the socket above which sending waits for 'drain'. */
const MAX_QUEUED_BYTES = 2 << 20;
/** How long a closing connection waits for the peer to close its side. */
const CLOSE_GRACE_MS = 1000;

/**
 * The server end of one TCP connection: the partition requests of every channel a
 * peer TaskManager reads from this one. Readers with credit and data wait in a FIFO
 * queue and send one buffer per turn; a reader without credit is simply not in the
 * queue, so it holds up no one. Buffers go out corked, header and payload as
 * separate chunks (no copy), many per writev, and return to their pools once the
 * kernel has them. Until the peer has authenticated (Handshake.ts) only 32-byte
 * handshake frames are accepted and nothing is allocated for it; one that has not
 * within AUTH_DEADLINE_MS is dropped.
 */
export class ServerConnection implements FrameHandler {
  private readonly readers = new Map<number, SubpartitionReader>();
  private readonly ready = new BufferQueue<SubpartitionReader>();
  private readonly decoder = new FrameDecoder(this, CLIENT_AUTH_FRAMES);
  private readonly handshake: ServerHandshake;
  private authDeadline: NodeJS.Timeout | null;
  private flushScheduled = false;
  private awaitingDrain = false;
  private closed = false;
  readonly peer: string;

  constructor(
    private readonly socket: net.Socket,
    private readonly partitions: ResultPartitionManager,
    private readonly log: (message: string) => void,
    private readonly onClosed: (connection: ServerConnection) => void,
    key: Buffer,
  ) {
    this.peer = `${socket.remoteAddress}:${socket.remotePort}`;
    this.handshake = new ServerHandshake(key);
    this.authDeadline = setTimeout(() => this.refuse(new AuthenticationError(`no authentication within ${AUTH_DEADLINE_MS} ms`)), AUTH_DEADLINE_MS);
    this.authDeadline.unref();
    socket.setNoDelay(true);
    socket.setKeepAlive(true);
    socket.write(encodeHandshake());
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => {
      if (this.decoder.isMidFrame) this.log(`connection from ${this.peer} ended inside a frame: truncated frame`);
    });
    socket.on('error', (error) => {
      if (!this.closed) this.log(`connection from ${this.peer} failed: ${error.message}`);
    });
    socket.on('close', () => this.dispose());
    socket.on('drain', () => {
      this.awaitingDrain = false;
      this.flush();
    });
  }

  /** Open partition requests. */
  get readerCount(): number {
    return this.readers.size;
  }

  /** Releases every reader and closes the socket, telling the peer why if there is a reason. */
  close(reason?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.clearAuthDeadline();
    this.decoder.stop();
    if (reason) this.socket.write(encodeErrorResponse(CONNECTION_WIDE, ErrorKind.FAILURE, reason.message));
    this.releaseReaders();
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  onControlFrame(frame: ControlFrame): void {
    switch (frame.type) {
      case FrameType.PARTITION_REQUEST:
        return this.request(frame.receiverId, frame.partitionId, frame.subpartition, frame.credit);
      case FrameType.ADD_CREDIT: {
        const reader = this.readers.get(frame.receiverId);
        // Credit for a finished or cancelled request crossed its end on the wire.
        if (reader === undefined) return;
        reader.addCredit(frame.credit);
        return this.enqueue(reader);
      }
      case FrameType.CANCEL_PARTITION_REQUEST:
        return this.releaseReader(frame.receiverId);
      case FrameType.CLOSE_REQUEST:
        return this.close();
      case FrameType.AUTH_NONCE:
        this.socket.write(this.handshake.onNonce(frame.value));
        return;
      case FrameType.AUTH_PROOF:
        this.socket.write(this.handshake.onProof(frame.value));
        this.decoder.accept(CLIENT_FRAMES);
        this.clearAuthDeadline();
        return;
      default:
        throw new ProtocolError(`unexpected frame type ${frame.type}`);
    }
  }

  onBufferHeader(_header: BufferHeader): Buffer | null {
    throw new ProtocolError('a client sent a BufferResponse');
  }

  onBufferPayload(): void {}

  private onData(chunk: Buffer): void {
    try {
      this.decoder.push(chunk);
    } catch (error) {
      this.refuse(error instanceof Error ? error : new SpillwayError('SPW_ERR_INTERNAL', String(error)));
    }
  }

  private refuse(failure: Error): void {
    if (this.closed) return;
    this.log(`closing connection from ${this.peer}: ${failure instanceof ProtocolError ? 'protocol error: ' : ''}${failure.message}`);
    this.close(failure);
  }

  private clearAuthDeadline(): void {
    if (this.authDeadline !== null) clearTimeout(this.authDeadline);
    this.authDeadline = null;
  }

  private request(receiverId: number, partitionId: string, subpartition: number, credit: number): void {
    if (receiverId === CONNECTION_WIDE || this.readers.has(receiverId)) {
      throw new ProtocolError(`PartitionRequest for receiver ${receiverId}, which is in use`);
    }
    const reader = new SubpartitionReader(receiverId, credit);
    // Registered first, so that no availability notice can miss it.
    this.readers.set(receiverId, reader);
    try {
      reader.attach(this.partitions.createSubpartitionView(partitionId, subpartition, () => this.onReaderAvailable(reader)));
    } catch (error) {
      this.readers.delete(receiverId);
      const kind = error instanceof PartitionNotFoundError ? ErrorKind.PARTITION_NOT_FOUND : ErrorKind.FAILURE;
      this.socket.write(encodeErrorResponse(receiverId, kind, error instanceof Error ? error.message : String(error)));
    }
  }

  private onReaderAvailable(reader: SubpartitionReader): void {
    if (this.readers.get(reader.receiverId) !== reader) return;
    reader.onDataAvailable();
    this.enqueue(reader);
  }

  private enqueue(reader: SubpartitionReader): void {
    if (reader.queued || !reader.isSendable) return;
    reader.queued = true;
    this.ready.push(reader);
    this.schedule(false);
  }

  /** Flushes soon: after the current task (new data or credit), or after pending I/O (a batch was full). */
  private schedule(afterIo: boolean): void {
    if (this.flushScheduled || this.awaitingDrain || this.closed) return;
    this.flushScheduled = true;
    if (afterIo) setImmediate(() => this.flush());
    else queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed || this.awaitingDrain) return;
    const socket = this.socket;
    const sent: NetworkBuffer[] = [];
    let headers: Buffer | null = null;
    let bytes = 0;
    // Chunks go out strictly in order; the last one is written after the loop, with the callback that recycles the batch.
    const out: { last: Buffer | null } = { last: null };
    const write = (chunk: Buffer): void => {
      if (out.last !== null) socket.write(out.last);
      out.last = chunk;
    };
    socket.cork();
    try {
      while (sent.length < MAX_BATCH_BUFFERS && bytes < MAX_BATCH_BYTES) {
        const reader = this.ready.shift();
        if (reader === undefined) break;
        reader.queued = false;
        const buffer = this.poll(reader, write);
        if (buffer === null) continue;
        headers ??= Buffer.allocUnsafe(MAX_BATCH_BUFFERS * BUFFER_HEADER_BYTES);
        const offset = sent.length * BUFFER_HEADER_BYTES;
        writeBufferResponseHeader(headers, offset, reader.receiverId, reader.nextSequence(), reader.backlog, buffer.dataType, buffer.compressed, buffer.size);
        write(headers.subarray(offset, offset + BUFFER_HEADER_BYTES));
        if (buffer.size > 0) write(buffer.bytes());
        sent.push(buffer);
        bytes += buffer.size;
        if (isEndOfPartition(buffer)) this.releaseReader(reader.receiverId);
        else this.enqueue(reader);
      }
    } finally {
      if (out.last !== null) socket.write(out.last, () => recycleAll(sent));
      socket.uncork();
      networkCounters.sentBytes += bytes + sent.length * BUFFER_HEADER_BYTES;
    }
    if (this.ready.length === 0) return;
    if (socket.writableLength >= MAX_QUEUED_BYTES) this.awaitingDrain = true;
    else this.schedule(true);
  }

  /**
   * The reader's next buffer, or null; a failed subpartition fails only its receiver,
   * with an error frame that takes its place in the batch (never inside another frame).
   */
  private poll(reader: SubpartitionReader, write: (chunk: Buffer) => void): NetworkBuffer | null {
    if (this.readers.get(reader.receiverId) !== reader) return null;
    try {
      return reader.pollSendable();
    } catch (error) {
      this.releaseReader(reader.receiverId);
      const message = error instanceof Error ? error.message : String(error);
      write(encodeErrorResponse(reader.receiverId, error instanceof PartitionReleasedError ? ErrorKind.PARTITION_RELEASED : ErrorKind.FAILURE, message));
      return null;
    }
  }

  private releaseReader(receiverId: number): void {
    const reader = this.readers.get(receiverId);
    if (reader === undefined) return;
    this.readers.delete(receiverId);
    reader.release();
  }

  private releaseReaders(): void {
    for (const reader of this.readers.values()) reader.release();
    this.readers.clear();
    this.ready.drain();
  }

  private dispose(): void {
    this.closed = true;
    this.clearAuthDeadline();
    this.decoder.stop();
    this.releaseReaders();
    this.onClosed(this);
  }
}

/** Write callbacks fire once the bytes are with the kernel, or with an error when the socket died: either way the memory is free. */
function recycleAll(buffers: NetworkBuffer[]): void {
  for (const buffer of buffers) buffer.recycle();
}

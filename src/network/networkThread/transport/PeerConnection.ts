import net from 'node:net';
import tls from 'node:tls';
import { FrameDecoder, type BufferHeader, type ControlFrame, type FrameHandler } from './FrameDecoder.js';
import { encodeCancelPartitionRequest, encodeCloseRequest, encodeHandshake, encodePartitionRequest, writeAddCredit } from './FrameEncoder.js';
import { ClientHandshake } from './Handshake.js';
import type { PartitionReceiver } from './PartitionReceiver.js';
import { ADD_CREDIT_BYTES, AUTH_DEADLINE_MS, BUFFER_HEADER_BYTES, CONNECTION_WIDE, FrameType, ProtocolError, SERVER_AUTH_FRAMES, SERVER_FRAMES } from './Protocol.js';
import { formatAddress, type RemoteAddress } from './RemoteAddress.js';
import { networkCounters } from '../NetworkCounters.js';
import { TLS_MIN_VERSION, type TransportSecurity } from './TransportSecurity.js';
import { SpillwayError } from '../../../errors/Errors.js';

/**
 * Socket reads land in one reused buffer: every byte is parsed or copied out before
 * the next read. Credit goes back once a read has been consumed, one AddCredit write
 * per read: 512 KiB reads make a tenth of the reads and credit writes that 64 KiB
 * reads did, and with the gate's 24 floating buffers the sender still never runs dry
 * (1 KiB records over one channel: 1.34 M/s at 64 KiB and 8 floating, 1.64 M/s now).
 */
const READ_BUFFER_BYTES = 512 * 1024;
/** How long a closing connection waits for the peer to close its side. */
const CLOSE_GRACE_MS = 1000;

/**
 * The client end of the one TCP connection to a remote TaskManager, shared by every
 * channel that reads from it. Routes each BufferResponse to its receiver by id,
 * gathers the credit freed while a read is consumed into one write, and fails
 * every open request at once when the connection breaks, so none of them hangs.
 * It sends nothing but the handshake until the server has proved it holds the
 * cluster key (Handshake.ts); what channels send meanwhile waits in order.
 */
export class PeerConnection implements FrameHandler {
  readonly name: string;
  private readonly receivers = new Map<number, PartitionReceiver>();
  private nextReceiverId = 0;
  private readonly socket: net.Socket;
  private readonly readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private readonly decoder = new FrameDecoder(this, SERVER_AUTH_FRAMES);
  private readonly handshake: ClientHandshake;
  /** Frames written before the server authenticated; null once it has. */
  private pending: Buffer[] | null = [];
  private authDeadline: NodeJS.Timeout | null;
  /** The receiver of the payload being decoded. */
  private current: PartitionReceiver | null = null;
  private creditDue: number[] = [];
  private creditScheduled = false;
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly whenClosed: Promise<void>;

  constructor(
    remote: RemoteAddress,
    private readonly idleTimeoutMs: number,
    private readonly log: (message: string) => void,
    security: TransportSecurity,
    private readonly onClosed: (connection: PeerConnection) => void,
    /** The connection was refused or broke: not told of a close this side asked for. */
    private readonly onBroken: (error: Error) => void = () => {},
  ) {
    this.name = formatAddress(remote);
    const options: net.NetConnectOpts = {
      host: remote.host,
      port: remote.port,
      noDelay: true,
      keepAlive: true,
      onread: {
        buffer: this.readBuffer,
        callback: (bytes) => {
          this.onRead(bytes);
          return true;
        },
      },
    };
    this.socket = security.tls
      ? tls.connect({ ...(options as tls.ConnectionOptions), ...security.tls, minVersion: TLS_MIN_VERSION })
      : net.connect(options);
    this.handshake = new ClientHandshake(security.key);
    this.socket.write(Buffer.concat([encodeHandshake(), this.handshake.start()]));
    this.authDeadline = setTimeout(
      () => this.fail(new SpillwayError('SPW_ERR_CONNECTION_LOST', `TaskManager ${this.name} did not authenticate within ${AUTH_DEADLINE_MS} ms`)),
      AUTH_DEADLINE_MS,
    );
    this.authDeadline.unref();
    this.socket.on('error', (error) => this.fail(new SpillwayError('SPW_ERR_CONNECTION_LOST', `connection to TaskManager ${this.name} failed: ${error.message}`)));
    this.socket.on('end', () => {
      const how = this.decoder.isMidFrame ? 'inside a frame (truncated)' : 'by the peer';
      this.fail(new SpillwayError('SPW_ERR_CONNECTION_LOST', `connection to TaskManager ${this.name} was closed ${how}`));
    });
    this.whenClosed = new Promise((resolve) =>
      this.socket.on('close', () => {
        this.fail(new SpillwayError('SPW_ERR_CONNECTION_LOST', `connection to TaskManager ${this.name} was lost`));
        resolve();
      }),
    );
    this.startIdleTimer();
  }

  /** Adds a receiver; its id names it in every frame of its request. */
  register(receiver: PartitionReceiver): number {
    if (this.closed) throw new SpillwayError('SPW_ERR_CONNECTION_LOST', `connection to TaskManager ${this.name} is closed`);
    let id = this.nextReceiverId;
    while (this.receivers.has(id)) id = (id + 1) % CONNECTION_WIDE;
    this.nextReceiverId = (id + 1) % CONNECTION_WIDE;
    this.receivers.set(id, receiver);
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.socket.ref();
    return id;
  }

  /** The receiver is done; the connection idles once it has none. */
  unregister(receiverId: number): void {
    const receiver = this.receivers.get(receiverId);
    if (receiver === undefined) return;
    // A payload half received for it must not be written on after it took its memory back.
    if (receiver === this.current) {
      this.decoder.skipPayload();
      this.current = null;
    }
    this.receivers.delete(receiverId);
    if (this.receivers.size > 0 || this.closed) return;
    this.startIdleTimer();
  }

  requestPartition(receiverId: number, partitionId: string, subpartition: number, credit: number): void {
    this.send(encodePartitionRequest(receiverId, partitionId, subpartition, credit));
  }

  cancel(receiverId: number): void {
    this.send(encodeCancelPartitionRequest(receiverId));
  }

  /** The receiver has credit to announce; all that is due goes out in one write. */
  announceCredit(receiverId: number): void {
    this.creditDue.push(receiverId);
    if (this.creditScheduled) return;
    this.creditScheduled = true;
    queueMicrotask(() => this.flushCredit());
  }

  /** Says goodbye (CloseRequest) and closes; requests still open fail. */
  close(): Promise<void> {
    if (!this.closed) {
      this.closeWith(new SpillwayError('SPW_ERR_CONNECTION_LOST', `connection to TaskManager ${this.name} was closed locally`));
      // Before authentication the server takes nothing but handshake frames.
      if (this.pending === null) this.socket.end(encodeCloseRequest());
      else this.socket.end();
      setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
    }
    return this.whenClosed;
  }

  onControlFrame(frame: ControlFrame): void {
    if (frame.type === FrameType.AUTH_NONCE) {
      this.socket.write(this.handshake.onNonce(frame.value));
      return;
    }
    if (frame.type === FrameType.AUTH_PROOF) return this.authenticated(frame.value);
    if (frame.type !== FrameType.ERROR_RESPONSE) throw new ProtocolError(`unexpected frame type ${frame.type} from a server`);
    if (frame.receiverId === CONNECTION_WIDE) {
      this.fail(new SpillwayError('SPW_ERR_CONNECTION_LOST', `TaskManager ${this.name} closed the connection: ${frame.message}`));
      return;
    }
    this.receivers.get(frame.receiverId)?.onErrorResponse(frame.kind, frame.message);
  }

  onBufferHeader(header: BufferHeader): Buffer | null {
    networkCounters.receivedBytes += BUFFER_HEADER_BYTES + header.size;
    // Buffers still on the wire when a request was cancelled or failed have no receiver: dropped.
    const receiver = this.receivers.get(header.receiverId) ?? null;
    this.current = receiver;
    return receiver === null ? null : receiver.onBufferHeader(header);
  }

  onBufferPayload(): void {
    const receiver = this.current;
    this.current = null;
    receiver?.onBufferComplete();
  }

  /** The server's proof: checked, then what waited goes out. */
  private authenticated(proof: Buffer): void {
    this.handshake.onProof(proof);
    this.decoder.accept(SERVER_FRAMES);
    this.clearAuthDeadline();
    const pending = this.pending ?? [];
    this.pending = null;
    if (pending.length > 0 && !this.closed) this.socket.write(Buffer.concat(pending));
  }

  private send(frame: Buffer): void {
    if (this.closed) return;
    if (this.pending === null) this.socket.write(frame);
    else this.pending.push(frame);
  }

  private clearAuthDeadline(): void {
    if (this.authDeadline !== null) clearTimeout(this.authDeadline);
    this.authDeadline = null;
  }

  private onRead(bytes: number): void {
    try {
      this.decoder.push(this.readBuffer, 0, bytes);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const failure = new SpillwayError('SPW_ERR_CONNECTION_LOST', `${error instanceof ProtocolError ? 'protocol error' : 'error'} on the connection to TaskManager ${this.name}: ${message}`);
      this.log(failure.message);
      this.fail(failure);
    }
  }

  private flushCredit(): void {
    this.creditScheduled = false;
    const due = this.creditDue;
    this.creditDue = [];
    if (this.closed) return;
    const frames = Buffer.allocUnsafe(due.length * ADD_CREDIT_BYTES);
    let length = 0;
    for (const id of due) {
      const credit = this.receivers.get(id)?.takeCredit() ?? 0;
      if (credit === 0) continue;
      writeAddCredit(frames, length, id, credit);
      length += ADD_CREDIT_BYTES;
    }
    if (length > 0) this.send(frames.subarray(0, length));
  }

  private startIdleTimer(): void {
    // An idle connection keeps no process alive.
    this.socket.unref();
    this.idleTimer = setTimeout(() => void this.close(), this.idleTimeoutMs);
    this.idleTimer.unref();
  }

  /** The connection broke: every open request fails with the cause. */
  private fail(error: Error): void {
    if (this.closed) return;
    this.closeWith(error);
    this.socket.destroy();
    this.onBroken(error);
  }

  private closeWith(error: Error): void {
    this.closed = true;
    this.clearAuthDeadline();
    this.decoder.stop();
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const receivers = [...this.receivers.values()];
    this.receivers.clear();
    this.onClosed(this);
    for (const receiver of receivers) receiver.onConnectionFailed(error);
  }
}

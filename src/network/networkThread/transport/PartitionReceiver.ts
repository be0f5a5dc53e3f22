import type { BufferHeader } from './FrameDecoder.js';
import type { ErrorKind } from './Protocol.js';

/** The receiving end of one partition request on a PeerConnection (a RemoteInputChannel). */
export interface PartitionReceiver {
  /** Where the payload of this buffer goes, or null to drop it (the receiver failed). */
  onBufferHeader(header: BufferHeader): Buffer | null;
  /** The payload named by the last onBufferHeader is complete. */
  onBufferComplete(): void;
  /** The server answered the request with an error. */
  onErrorResponse(kind: ErrorKind, message: string): void;
  /** The connection failed or closed while the request was open. */
  onConnectionFailed(error: Error): void;
  /** Credit not yet announced, now reset to zero because the caller announces it. */
  takeCredit(): number;
}

import { PeerConnection } from './PeerConnection.js';
import { formatAddress, type RemoteAddress } from './RemoteAddress.js';
import { OPEN, type TransportSecurity } from './TransportSecurity.js';
import { SpillwayError } from '../../../errors/Errors.js';

export interface ConnectionManagerOptions {
  /** A connection no channel has used for this long is closed. */
  idleTimeoutMs?: number;
  /** Where protocol errors on connections are reported. */
  log?: (message: string) => void;
  /** Told when a connection opens or closes, with its peer's address (for logs). */
  onConnection?: ConnectionListener;
  /** Told when a connection to a peer is refused or breaks (not when closed here): the peer may be gone. */
  onPeerLost?: (remote: RemoteAddress, error: Error) => void;
  /** The handshake key and TLS; OPEN (no secret, plain TCP) if absent. */
  security?: TransportSecurity;
}

/** A data connection opened or closed: `in` served to a peer, `out` opened to one. */
export type ConnectionListener = (event: 'opened' | 'closed', direction: 'in' | 'out', peer: string) => void;

export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;

const defaultLog = (message: string): void => console.warn(`[spillway connections] ${message}`);

/**
 * A process's connections to remote data servers: at most one per TaskManager,
 * shared by every channel of every task and job that reads from it, kept while
 * idle for a while so that the next job reuses it.
 */
export class ConnectionManager {
  private readonly peers = new Map<string, PeerConnection>();
  private readonly idleTimeoutMs: number;
  private readonly log: (message: string) => void;
  private readonly onConnection: ConnectionListener;
  private readonly onPeerLost: (remote: RemoteAddress, error: Error) => void;
  private readonly security: TransportSecurity;
  private closed = false;

  constructor(options: ConnectionManagerOptions = {}) {
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.log = options.log ?? defaultLog;
    this.onConnection = options.onConnection ?? (() => {});
    this.onPeerLost = options.onPeerLost ?? (() => {});
    this.security = options.security ?? OPEN;
  }

  /** Open connections (including ones still connecting). */
  get connectionCount(): number {
    return this.peers.size;
  }

  /** The connection to a TaskManager, opened on first use. */
  connection(remote: RemoteAddress): PeerConnection {
    if (this.closed) throw new SpillwayError('SPW_ERR_CONNECTION_LOST', 'the connection manager is closed');
    const key = formatAddress(remote);
    let peer = this.peers.get(key);
    if (peer === undefined) {
      peer = new PeerConnection(
        remote,
        this.idleTimeoutMs,
        this.log,
        this.security,
        (gone) => {
          if (this.peers.get(key) === gone) this.peers.delete(key);
          this.onConnection('closed', 'out', key);
        },
        (error) => this.onPeerLost(remote, error),
      );
      this.peers.set(key, peer);
      this.onConnection('opened', 'out', key);
    }
    return peer;
  }

  /** Closes every connection; channels still reading on them fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.peers.values()].map((peer) => peer.close()));
  }
}

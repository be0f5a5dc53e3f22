import net from 'node:net';
import tls from 'node:tls';
import type { ResultPartitionManager } from '../partition/ResultPartitionManager.js';
import type { ConnectionListener } from './ConnectionManager.js';
import { AUTH_DEADLINE_MS } from './Protocol.js';
import { ServerConnection } from './ServerConnection.js';
import { OPEN, TLS_MIN_VERSION, type TransportSecurity } from './TransportSecurity.js';
import { DEFAULT_HOST } from '../../../ServerOptions.js';
import { SpillwayError } from '../../../errors/Errors.js';

export interface DataServerOptions {
  /** Interface to bind; 127.0.0.1 unless told otherwise. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Where connection errors are reported. */
  log?: (message: string) => void;
  /** Told when a peer's connection opens or closes (for logs). */
  onConnection?: ConnectionListener;
  /** The handshake key and TLS; OPEN (no secret, plain TCP) if absent. */
  security?: TransportSecurity;
}

const defaultLog = (message: string): void => console.warn(`[spillway data server] ${message}`);

/**
 * A TaskManager's data port: serves the partitions of its ResultPartitionManager to
 * every peer that connects. A broken peer loses its own connection and nothing else.
 */
export class DataServer {
  private readonly server: net.Server;
  private readonly key: Buffer;
  private readonly connections = new Set<ServerConnection>();
  private readonly host: string;
  private readonly port: number;
  private readonly log: (message: string) => void;
  private readonly onConnection: ConnectionListener;
  private bound: { host: string; port: number } | null = null;

  constructor(
    private readonly partitions: ResultPartitionManager,
    options: DataServerOptions = {},
  ) {
    this.host = options.host ?? DEFAULT_HOST;
    this.port = options.port ?? 0;
    this.log = options.log ?? defaultLog;
    this.onConnection = options.onConnection ?? (() => {});
    const security = options.security ?? OPEN;
    this.key = security.key;
    this.server = security.tls ? this.tlsServer(security.tls) : net.createServer((socket) => this.accept(socket));
  }

  /** Connections open now. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** Partition requests being served now, over all connections. */
  get requestCount(): number {
    let count = 0;
    for (const connection of this.connections) count += connection.readerCount;
    return count;
  }

  listen(): Promise<{ host: string; port: number }> {
    if (this.bound) return Promise.resolve(this.bound);
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, this.host, () => {
        this.server.off('error', reject);
        this.server.on('error', (error) => this.log(`server error: ${error.message}`));
        const address = this.server.address() as net.AddressInfo;
        this.bound = { host: this.host, port: address.port };
        resolve(this.bound);
      });
    });
  }

  /** Stops accepting and closes every connection, releasing the requests they serve. */
  close(): Promise<void> {
    for (const connection of this.connections) connection.close(new SpillwayError('SPW_ERR_CONNECTION_LOST', 'the data server is shutting down'));
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Mutual TLS: a peer without a certificate of the cluster's CA is refused before a byte of the protocol. */
  private tlsServer(material: NonNullable<TransportSecurity['tls']>): tls.Server {
    const server = tls.createServer(
      { ...material, requestCert: true, rejectUnauthorized: true, minVersion: TLS_MIN_VERSION, handshakeTimeout: AUTH_DEADLINE_MS },
      (socket) => this.accept(socket),
    );
    server.on('tlsClientError', (error, socket) => this.log(`TLS refused a connection from ${socket.remoteAddress}:${socket.remotePort}: ${error.message}`));
    return server;
  }

  private accept(socket: net.Socket): void {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const connection = new ServerConnection(
      socket,
      this.partitions,
      this.log,
      (closed) => {
        this.connections.delete(closed);
        this.onConnection('closed', 'in', peer);
      },
      this.key,
    );
    this.connections.add(connection);
    this.onConnection('opened', 'in', peer);
  }
}

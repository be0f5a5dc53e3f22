import type { CompressionCodec } from '../buffer/CompressionCodec.js';
import { BufferPool } from '../buffer/BufferPool.js';
import { NetworkBufferPool } from '../buffer/NetworkBufferPool.js';
import type { ChannelAvailability, InputChannel, SubpartitionAddress } from '../InputChannel.js';
import { LocalInputChannel } from './consumer/LocalInputChannel.js';
import { RemoteInputChannel, type RemoteAddress } from './consumer/RemoteInputChannel.js';
import type { PartitionType } from './partition/PartitionType.js';
import { partitionType } from './partition/PartitionTypes.js';
import { ResultPartition } from './partition/ResultPartition.js';
import { ResultPartitionManager } from './partition/ResultPartitionManager.js';
import { ConnectionManager, type ConnectionListener } from './transport/ConnectionManager.js';
import { DataServer } from './transport/DataServer.js';
import type { TransportSecurity } from './transport/TransportSecurity.js';
import { SpillwayError } from '../../errors/Errors.js';

/** Buffers each subpartition of a pipelined partition may queue. */
export const DEFAULT_BUFFERS_PER_SUBPARTITION = 128;
/** Bytes a blocking partition keeps in memory before it spills. */
export const DEFAULT_BLOCKING_MEMORY_BUDGET = 16 << 20;
/** Buffers the TaskManager's read pool lends at most to readers of partitions on disk (sort-merge, hybrid), and its share of network memory at most. */
export const DEFAULT_READ_BUFFERS = 256;
const READ_POOL_SHARE = 1 / 8;
/** Buffers a remote channel owns for its whole life (Flink's exclusive buffers). */
export const DEFAULT_EXCLUSIVE_BUFFERS = 2;
/** Buffers a gate's remote channels borrow by backlog (Flink's floating buffers). */
export const DEFAULT_FLOATING_BUFFERS = 64;

export interface ShuffleOptions {
  /** Network memory of the process, bytes. */
  memory: number;
  segmentSize?: number;
  /** Interface the data server binds. */
  host?: string;
  /** The host peers reach the data server at, as partition locations name it; `host` if absent. */
  advertiseHost?: string;
  dataPort?: number;
  spillDir: string;
  /** Handshake key and TLS of every data connection, both ways; unauthenticated plain TCP if absent. */
  security?: TransportSecurity;
  /** Default DEFAULT_BUFFERS_PER_SUBPARTITION. */
  buffersPerSubpartition?: number;
  /** Default DEFAULT_BLOCKING_MEMORY_BUDGET. */
  blockingMemoryBudget?: number;
  /** Default DEFAULT_EXCLUSIVE_BUFFERS. */
  exclusiveBuffersPerChannel?: number;
  /** Default DEFAULT_FLOATING_BUFFERS. */
  floatingBuffersPerGate?: number;
  /** Default DEFAULT_READ_BUFFERS, or an eighth of the network memory if that is less. */
  readBuffers?: number;
  /** Where connection problems are reported (each message names the peer); a warning on the console by default. */
  log?: (message: string) => void;
  /** Told when a data connection opens or closes. */
  onConnection?: ConnectionListener;
  /** Told when a data connection to a peer is refused or breaks. */
  onPeerLost?: (remote: RemoteAddress, error: Error) => void;
}

/** Where a channel reads: this process, or a remote data server. */
export type ChannelSource = { address: SubpartitionAddress; remote: RemoteAddress | null };

/**
 * The data plane of one process: its network memory, partitions, data server and
 * connections, and the factory for partitions and input channels built from them.
 * It runs in the network thread; a task thread's InputGate reads these channels
 * through the handover (NetworkEnd), never directly.
 */
export class ShuffleEnvironment {
  readonly buffers: NetworkBufferPool;
  readonly partitions = new ResultPartitionManager();
  readonly connections: ConnectionManager;
  private readonly server: DataServer;
  private dataAddress: RemoteAddress | null = null;
  private readPool: BufferPool | null = null;

  constructor(private readonly options: ShuffleOptions) {
    this.buffers = new NetworkBufferPool({ totalBytes: options.memory, segmentSize: options.segmentSize });
    const { log, onConnection, security } = options;
    this.connections = new ConnectionManager({ log, onConnection, security, onPeerLost: options.onPeerLost });
    this.server = new DataServer(this.partitions, { host: options.host, port: options.dataPort, log, onConnection, security });
  }

  /** Starts the data server; returns the address peers reach it at. */
  async start(): Promise<RemoteAddress> {
    const bound = await this.server.listen();
    this.dataAddress = { host: this.options.advertiseHost ?? bound.host, port: bound.port };
    return this.dataAddress;
  }

  get address(): RemoteAddress {
    if (!this.dataAddress) throw new SpillwayError('SPW_ERR_INTERNAL', 'the data server is not started');
    return this.dataAddress;
  }

  /** Data connections other processes opened to this one's data server. */
  get serverConnections(): number {
    return this.server.connectionCount;
  }

  /**
   * A partition of the given type (or type name), registered with this process's
   * partition manager. `compression` is the codec of what is written to it here (a task
   * thread compresses its buffers itself before they reach the partition).
   */
  createPartition(id: string, type: PartitionType | string, numSubpartitions: number, compression: CompressionCodec | null = null): ResultPartition {
    const kind = typeof type === 'string' ? partitionType(type) : type;
    const config = {
      segmentSize: this.buffers.segmentSize,
      buffersPerSubpartition: this.options.buffersPerSubpartition ?? DEFAULT_BUFFERS_PER_SUBPARTITION,
      memoryBudget: this.options.blockingMemoryBudget ?? DEFAULT_BLOCKING_MEMORY_BUDGET,
    };
    const { min, max } = kind.poolSize(numSubpartitions, config);
    const pool = new BufferPool(this.buffers, min, Math.max(min, max, 1), `pool of partition ${id}`);
    let partition: ResultPartition;
    try {
      partition = new ResultPartition({
        id,
        type: kind,
        numSubpartitions,
        pool,
        spillDir: this.options.spillDir,
        memoryBudget: config.memoryBudget,
        buffersPerSubpartition: config.buffersPerSubpartition,
        readPool: () => this.sharedReadPool(),
        compression,
      });
    } catch (error) {
      pool.destroy();
      throw error;
    }
    this.partitions.register(partition);
    return partition;
  }

  /**
   * The bounded pool that every reader of a partition on disk borrows from, so that
   * many readers cannot take the network memory. It reserves nothing: a read buffer
   * goes back to the network memory as soon as its consumer is done with it.
   */
  private sharedReadPool(): BufferPool {
    const max = this.options.readBuffers ?? Math.max(4, Math.min(DEFAULT_READ_BUFFERS, Math.floor(this.buffers.totalSegments * READ_POOL_SHARE)));
    this.readPool ??= new BufferPool(this.buffers, 0, max, 'read pool of partitions on disk');
    return this.readPool;
  }

  /**
   * Reserves the pool of a gate of `channels` channels as if all were remote, so
   * that a task short of network memory fails when it is deployed, not mid-run.
   * createInputChannels() shrinks it to the channels that are remote.
   */
  reserveGatePool(channels: number, name: string): BufferPool {
    const exclusive = this.exclusivePerChannel;
    const floating = this.options.floatingBuffersPerGate ?? DEFAULT_FLOATING_BUFFERS;
    return new BufferPool(this.buffers, channels * exclusive, channels * exclusive + floating, `pool of gate ${name}`);
  }

  /**
   * The channels of a gate, reporting availability to `availability`; remote ones
   * take their buffers from the reserved pool, which is shrunk to them (destroyed
   * if there are none).
   */
  createInputChannels(sources: ChannelSource[], availability: ChannelAvailability, pool: BufferPool): InputChannel[] {
    const exclusive = this.exclusivePerChannel;
    const remote = sources.filter((s) => s.remote !== null).length;
    if (remote === 0) pool.destroy();
    else pool.shrink(remote * exclusive, pool.max - pool.min + remote * exclusive);
    return sources.map((source, i) =>
      source.remote === null
        ? new LocalInputChannel(i, source.address, this.partitions, availability)
        : new RemoteInputChannel(i, source.address, source.remote, this.connections, availability, pool, { exclusiveBuffers: exclusive }),
    );
  }

  private get exclusivePerChannel(): number {
    return this.options.exclusiveBuffersPerChannel ?? DEFAULT_EXCLUSIVE_BUFFERS;
  }

  async close(): Promise<void> {
    this.partitions.releaseWhere(() => true);
    this.readPool?.destroy();
    await Promise.all([this.server.close(), this.connections.close()]);
  }
}

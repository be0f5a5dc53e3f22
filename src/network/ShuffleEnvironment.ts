import { BufferPool } from './buffer/BufferPool.js';
import { NetworkBufferPool } from './buffer/NetworkBufferPool.js';
import { InputGate } from './consumer/InputGate.js';
import type { InputChannel, SubpartitionAddress } from './consumer/InputChannel.js';
import { LocalInputChannel } from './consumer/LocalInputChannel.js';
import { RemoteInputChannel, type RemoteAddress } from './consumer/RemoteInputChannel.js';
import { ResultPartition, type PartitionType } from './partition/ResultPartition.js';
import { ResultPartitionManager } from './partition/ResultPartitionManager.js';
import { ConnectionManager } from './transport/ConnectionManager.js';
import { DataServer } from './transport/DataServer.js';

export interface ShuffleOptions {
  /** Network memory of the process, bytes. */
  memory: number;
  segmentSize?: number;
  host?: string;
  dataPort?: number;
  spillDir: string;
  /** Buffers each subpartition of a pipelined partition may queue. */
  buffersPerSubpartition?: number;
  /** Bytes a blocking partition keeps in memory before it spills. */
  blockingMemoryBudget?: number;
  exclusiveBuffersPerChannel?: number;
  floatingBuffersPerGate?: number;
}

/** Where a channel reads: this process, or a remote data server. */
export type ChannelSource = { address: SubpartitionAddress; remote: RemoteAddress | null };

/**
 * The data plane of one process: its network memory, partitions, data server and
 * connections, and the factory for partitions and input gates built from them.
 */
export class ShuffleEnvironment {
  readonly buffers: NetworkBufferPool;
  readonly partitions = new ResultPartitionManager();
  readonly connections = new ConnectionManager();
  private readonly server: DataServer;
  private dataAddress: RemoteAddress | null = null;

  constructor(private readonly options: ShuffleOptions) {
    this.buffers = new NetworkBufferPool({ totalBytes: options.memory, segmentSize: options.segmentSize });
    this.server = new DataServer(this.partitions, { host: options.host, port: options.dataPort });
  }

  async start(): Promise<RemoteAddress> {
    this.dataAddress = await this.server.listen();
    return this.dataAddress;
  }

  get address(): RemoteAddress {
    if (!this.dataAddress) throw new Error('the data server is not started');
    return this.dataAddress;
  }

  createPartition(id: string, type: PartitionType, numSubpartitions: number): ResultPartition {
    const perSubpartition = this.options.buffersPerSubpartition ?? 32;
    const budget = this.options.blockingMemoryBudget ?? 16 << 20;
    const segment = this.buffers.segmentSize;
    const min = numSubpartitions + 1;
    const max = type === 'pipelined' ? numSubpartitions * perSubpartition + 1 : Math.ceil(budget / segment) + min;
    const pool = new BufferPool(this.buffers, min, Math.max(min, max), `pool of partition ${id}`);
    const partition = new ResultPartition({ id, type, numSubpartitions, pool, spillDir: this.options.spillDir, memoryBudget: budget });
    this.partitions.register(partition);
    return partition;
  }

  /**
   * A gate over the given channels; remote ones share one buffer pool of exclusive
   * plus floating buffers, which the caller destroys once the gate is closed.
   */
  createInputGate(sources: ChannelSource[], name: string): { gate: InputGate; pool: BufferPool | null } {
    const gate = new InputGate();
    const remoteCount = sources.filter((s) => s.remote !== null).length;
    const exclusive = this.options.exclusiveBuffersPerChannel ?? 2;
    const floating = this.options.floatingBuffersPerGate ?? 24;
    const pool =
      remoteCount > 0 ? new BufferPool(this.buffers, remoteCount * exclusive, remoteCount * exclusive + floating, `pool of gate ${name}`) : null;
    const channels: InputChannel[] = sources.map((source, i) =>
      source.remote === null || pool === null
        ? new LocalInputChannel(i, source.address, this.partitions, gate)
        : new RemoteInputChannel(i, source.address, source.remote, this.connections, gate, pool, { exclusiveBuffers: exclusive }),
    );
    gate.setChannels(channels);
    return { gate, pool };
  }

  async close(): Promise<void> {
    this.partitions.releaseWhere(() => true);
    await Promise.all([this.server.close(), this.connections.close()]);
  }
}

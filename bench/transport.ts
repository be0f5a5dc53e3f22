/**
 * End-to-end transport throughput: a producer process (DataServer, a pipelined
 * partition, a RecordWriter) and a consumer process (this one: RemoteInputChannels
 * over one connection, an InputGate and a RecordReader that decodes every record),
 * 32 KiB buffers, the cluster's default pool sizes (32 buffers per subpartition; 2
 * exclusive buffers per channel and 24 floating per gate). One more workload sends
 * full buffers without records: the transport's own ceiling. Imported, it offers
 * the measurements; run as `node transport.js producer CASE` it is the producer.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BufferPool } from '../src/network/buffer/BufferPool.js';
import { NetworkBufferPool } from '../src/network/buffer/NetworkBufferPool.js';
import { InputGate } from '../src/network/consumer/InputGate.js';
import { RecordReader } from '../src/network/consumer/RecordReader.js';
import { RemoteInputChannel } from '../src/network/consumer/RemoteInputChannel.js';
import { ResultPartition } from '../src/network/partition/ResultPartition.js';
import { ResultPartitionManager } from '../src/network/partition/ResultPartitionManager.js';
import { ConnectionManager } from '../src/network/transport/ConnectionManager.js';
import { DataServer } from '../src/network/transport/DataServer.js';
import { RebalanceSelector } from '../src/network/writer/ChannelSelector.js';
import { RecordWriter } from '../src/network/writer/RecordWriter.js';
import { measureLoopback, type LoopbackResult } from './loopback.js';

export type Workload = 'word tuples' | '100 B records' | '1 KiB records' | 'full buffers, no records';

/** The transport alone: full 32 KiB buffers handed to the partition and recycled unread, no serialization. */
const BUFFERS: Workload = 'full buffers, no records';

export interface TransportCase {
  workload: Workload;
  channels: number;
  records: number;
}

export interface TransportResult extends TransportCase {
  seconds: number;
  recordsPerSec: number;
  /** Buffer bytes (serialized records with their length prefixes) per second. */
  mbPerSec: number;
}

export interface TransportReport {
  rows: TransportResult[];
  loopback: LoopbackResult;
}

const SELF = fileURLToPath(import.meta.url);
const SEGMENT_SIZE = 32 << 10;
const PARTITION_ID = 'bench';

export const DEFAULT_CASES: TransportCase[] = [
  { workload: 'word tuples', channels: 1, records: 6_000_000 },
  { workload: 'word tuples', channels: 4, records: 6_000_000 },
  { workload: '100 B records', channels: 1, records: 4_000_000 },
  { workload: '100 B records', channels: 4, records: 4_000_000 },
  { workload: '1 KiB records', channels: 1, records: 1_500_000 },
  { workload: '1 KiB records', channels: 4, records: 1_500_000 },
  { workload: BUFFERS, channels: 1, records: 100_000 },
  { workload: BUFFERS, channels: 4, records: 100_000 },
];

/** 1024 distinct records of the workload, built once: the producer cycles through them. */
function sampleRecords(workload: Workload): unknown[] {
  const text = (i: number, length: number): string => `${i}:`.padEnd(length, 'abcdefghijklmnopqrstuvwxyz'[i % 26]);
  return Array.from({ length: 1024 }, (_, i) => {
    if (workload === 'word tuples') return [text(i, 3 + (i % 7)), 1];
    // About 100 B and 1 KiB once packed: a few fields, the structure sent once per channel.
    const size = workload === '100 B records' ? 60 : 980;
    return { id: i, key: `key-${String(i).padStart(6, '0')}`, flag: i % 3 === 0, value: text(i, size) };
  });
}

/** Runs every case `repeat` times (keeping the median) and the raw TCP baseline before and after. */
export async function transportBenchmark(cases = DEFAULT_CASES, repeat = 3): Promise<TransportReport> {
  const loopbacks = [await measureLoopback()];
  const rows: TransportResult[] = [];
  for (const benchCase of cases) {
    const runs: TransportResult[] = [];
    for (let i = 0; i < repeat; i++) runs.push(await measureTransport(benchCase));
    rows.push(median(runs, (r) => r.seconds));
  }
  loopbacks.push(await measureLoopback(), await measureLoopback());
  return { rows, loopback: median(loopbacks, (l) => l.seconds) };
}

/** One run: a producer process writes, this process reads (and decodes, unless the case has no records). */
export async function measureTransport(benchCase: TransportCase): Promise<TransportResult> {
  const producer = spawn(process.execPath, [SELF, 'producer', JSON.stringify(benchCase)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<never>((_, reject) => producer.once('exit', (code) => reject(new Error(`producer exited (${code})`))));
  const connections = new ConnectionManager();
  const global = new NetworkBufferPool({ totalBytes: 64 << 20, segmentSize: SEGMENT_SIZE });
  const n = benchCase.channels;
  const pool = new BufferPool(global, 2 * n, 2 * n + 24);
  try {
    const port = await Promise.race([new Promise<number>((resolve) => producer.once('message', (m: { port: number }) => resolve(m.port))), exited]);
    const gate = new InputGate();
    const remote = { host: '127.0.0.1', port };
    gate.setChannels(Array.from({ length: n }, (_, c) => new RemoteInputChannel(c, { partitionId: PARTITION_ID, subpartition: c }, remote, connections, gate, pool)));
    const started = performance.now();
    producer.send('go');
    const { count, bytes } = await Promise.race([benchCase.workload === BUFFERS ? drain(gate) : decode(gate), exited]);
    const seconds = (performance.now() - started) / 1000;
    if (count !== benchCase.records) throw new Error(`received ${count} of ${benchCase.records} records`);
    return { ...benchCase, seconds, recordsPerSec: count / seconds, mbPerSec: bytes / seconds / 1e6 };
  } finally {
    producer.kill();
    pool.destroy();
    await connections.close();
  }
}

/** Decodes every record. */
async function decode(gate: InputGate): Promise<{ count: number; bytes: number }> {
  const reader = new RecordReader<unknown>(gate);
  let count = 0;
  await reader.forEach(() => void count++);
  return { count, bytes: reader.bytesIn };
}

/** Recycles every buffer unread. */
async function drain(gate: InputGate): Promise<{ count: number; bytes: number }> {
  gate.requestPartitions();
  let count = 0;
  let bytes = 0;
  while (!gate.isFinished) {
    const buffer = gate.pollNext();
    if (buffer === null) {
      await gate.waitForData();
      continue;
    }
    count++;
    bytes += buffer.size;
    buffer.recycle();
  }
  gate.close();
  return { count, bytes };
}

/** The producing process: registers the partition, and on 'go' writes the records round-robin. */
async function produce(benchCase: TransportCase): Promise<void> {
  const n = benchCase.channels;
  const global = new NetworkBufferPool({ totalBytes: 64 << 20, segmentSize: SEGMENT_SIZE });
  const partitions = new ResultPartitionManager();
  // Sized as ShuffleEnvironment sizes a pipelined partition: 32 buffers a subpartition.
  const partition = new ResultPartition({ id: PARTITION_ID, type: 'pipelined', numSubpartitions: n, pool: new BufferPool(global, n + 1, 32 * n + 1) });
  partitions.register(partition);
  const server = new DataServer(partitions);
  const { port } = await server.listen();
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send?.({ port });
  });
  if (benchCase.workload === BUFFERS) await writeBuffers(partition, benchCase.records);
  else await writeRecords(partition, benchCase);
}

async function writeRecords(partition: ResultPartition, benchCase: TransportCase): Promise<void> {
  const records = sampleRecords(benchCase.workload);
  const writer = new RecordWriter<unknown>(partition, new RebalanceSelector());
  for (let i = 0; i < benchCase.records; i++) {
    const waiting = writer.emit(records[i & 1023]);
    if (waiting) await waiting;
  }
  await writer.close();
}

async function writeBuffers(partition: ResultPartition, count: number): Promise<void> {
  const pool = partition.pool;
  for (let i = 0; i < count; i++) {
    const buffer = pool.requestBuffer() ?? (await pool.requestBufferAsync());
    buffer.size = buffer.capacity;
    partition.add(buffer, i % partition.numSubpartitions);
  }
  await partition.finish();
}

/** The table: each case beside the raw TCP figure, with the ratio of their MB/s. */
export function formatTransportReport({ rows, loopback }: TransportReport): string {
  const raw = loopback.mbPerSec;
  const lines = [
    `raw loopback TCP between two Node processes, ${loopback.chunkBytes >> 10} KiB writes: ${raw.toFixed(0)} MB/s`,
    '',
    '| workload | channels | records | records/s | MB/s | raw TCP MB/s | ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const recordsPerSec = r.workload === BUFFERS ? `${(r.recordsPerSec / 1e3).toFixed(1)} k buffers` : r.recordsPerSec >= 1e6 ? `${(r.recordsPerSec / 1e6).toFixed(2)} M` : `${(r.recordsPerSec / 1e3).toFixed(0)} k`;
    lines.push(`| ${r.workload} | ${r.channels} | ${r.records.toLocaleString('en')} | ${recordsPerSec} | ${r.mbPerSec.toFixed(0)} | ${raw.toFixed(0)} | ${(r.mbPerSec / raw).toFixed(2)} |`);
  }
  return lines.join('\n');
}

function median<T>(values: T[], key: (value: T) => number): T {
  return [...values].sort((a, b) => key(a) - key(b))[Math.floor(values.length / 2)];
}

if (process.argv[1] === SELF && process.argv[2] === 'producer') {
  // A benchmark that dies (or hangs and is killed) takes its producer with it.
  process.once('disconnect', () => process.exit(1));
  void produce(JSON.parse(process.argv[3]) as TransportCase);
}

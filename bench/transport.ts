/**
 * End-to-end transport throughput, shaped as a TaskManager is: a producer process
 * whose task thread packs records into shared network memory while its main thread
 * serves the partition (DataServer), and a consumer process (this one) whose main
 * thread receives over one connection (RemoteInputChannels) while its task thread
 * decodes every record. 32 KiB buffers, the cluster's default pool sizes (128 buffers
 * per subpartition; 2 exclusive buffers per channel and 64 floating per gate). One
 * more workload sends full buffers without records: the transport's own ceiling.
 * Imported, it offers the measurements; run as `node transport.js producer CASE` it
 * is the producer.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ResultPartition } from '../src/network/networkThread/partition/ResultPartition.js';
import { ShuffleEnvironment } from '../src/network/networkThread/ShuffleEnvironment.js';
import type { TransportSecurity } from '../src/network/networkThread/transport/TransportSecurity.js';
import { createHandoverRings, HandoverLink } from '../src/network/handover/HandoverLink.js';
import { NetworkEnd } from '../src/network/networkThread/NetworkEnd.js';
import { measureLoopback, type LoopbackResult } from './loopback.js';
import { BUFFERS, DEFAULT_CASES, PARTITION_ID, type TransportCase, type Workload } from './transportCases.js';
import type { TransportThreadData, TransportThreadResult } from './transportThread.js';

export { DEFAULT_CASES, type TransportCase, type Workload };

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
const THREAD = new URL('./transportThread.js', import.meta.url);
const SEGMENT_SIZE = 32 << 10;

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

/** How both ends secure the connection: a handshake key (hex) and, for TLS, PEM files. */
export interface BenchSecurity {
  key: string;
  tls?: { cert: string; key: string; ca: string };
}

function transportSecurity(security: BenchSecurity | undefined): TransportSecurity | undefined {
  if (security === undefined) return undefined;
  const tls = security.tls;
  return {
    key: Buffer.from(security.key, 'hex'),
    tls: tls ? { cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key), ca: fs.readFileSync(tls.ca) } : null,
  };
}

/** One run: a producer process writes, this process reads (and its task thread decodes, unless the case has no records). */
export async function measureTransport(benchCase: TransportCase, security?: BenchSecurity): Promise<TransportResult> {
  const args = [...process.execArgv, SELF, 'producer', JSON.stringify(benchCase), JSON.stringify(security ?? null)];
  const producer = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<never>((_, reject) => producer.once('exit', (code) => reject(new Error(`producer exited (${code})`))));
  const spill = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-transport-'));
  const env = new ShuffleEnvironment({ memory: 64 << 20, segmentSize: SEGMENT_SIZE, spillDir: spill, security: transportSecurity(security) });
  let task: TaskThread | null = null;
  try {
    const port = await Promise.race([new Promise<number>((resolve) => producer.once('message', (m: { port: number }) => resolve(m.port))), exited]);
    const remote = { host: '127.0.0.1', port };
    const sources = Array.from({ length: benchCase.channels }, (_, subpartition) => ({ address: { partitionId: PARTITION_ID, subpartition }, remote }));
    task = new TaskThread(env, 'consume', benchCase, [], [benchCase.channels], (end, g) => end.attachInput(g, sources));
    const started = performance.now();
    producer.send('go');
    const { count, bytes } = await Promise.race([task.run(), exited]);
    const seconds = (performance.now() - started) / 1000;
    if (count !== benchCase.records) throw new Error(`received ${count} of ${benchCase.records} records`);
    return { ...benchCase, seconds, recordsPerSec: count / seconds, mbPerSec: bytes / seconds / 1e6 };
  } finally {
    producer.kill();
    await task?.close();
    await env.close();
    fs.rmSync(spill, { recursive: true, force: true });
  }
}

/** A task thread of this benchmark and the network thread's end of it. */
class TaskThread {
  private readonly worker: Worker;
  private readonly link: HandoverLink;
  private readonly end: NetworkEnd;
  private result: Promise<TransportThreadResult>;

  constructor(
    env: ShuffleEnvironment,
    role: TransportThreadData['role'],
    benchCase: TransportCase,
    partitions: ResultPartition[],
    gates: number[],
    openInput: (end: NetworkEnd, g: number) => void,
  ) {
    const rings = createHandoverRings();
    const data: TransportThreadData = { role, shared: env.buffers.arena.shared, benchCase, rings };
    this.worker = new Worker(THREAD, { workerData: data });
    this.link = HandoverLink.network(rings);
    this.end = new NetworkEnd(env, this.link.port(this.worker), partitions, gates, role, {
      inputRequested: (g) => openInput(this.end, g),
      partitionFinished: () => {},
      overtaken: () => {},
    });
    this.link.handler = (entries) => this.end.handle(entries);
    this.result = new Promise((resolve, reject) => {
      this.worker.on('message', (message: TransportThreadResult) => {
        this.link.drain();
        resolve(message);
      });
      this.worker.once('error', reject);
    });
  }

  run(): Promise<TransportThreadResult> {
    this.worker.postMessage('go');
    return this.result;
  }

  async close(): Promise<void> {
    await this.worker.terminate();
    this.link.close();
    this.end.reclaim();
  }
}

/** The producing process: registers the partition, and on 'go' its task thread writes the records round-robin. */
async function produce(benchCase: TransportCase, security: BenchSecurity | undefined): Promise<void> {
  const spill = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-transport-'));
  process.once('exit', () => fs.rmSync(spill, { recursive: true, force: true }));
  const env = new ShuffleEnvironment({ memory: 64 << 20, segmentSize: SEGMENT_SIZE, spillDir: spill, security: transportSecurity(security) });
  const partition = env.createPartition(PARTITION_ID, 'pipelined', benchCase.channels);
  const { port } = await env.start();
  const task = new TaskThread(env, 'produce', benchCase, [partition], [], () => {});
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send?.({ port });
  });
  await task.run();
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
  // Stopped by the benchmark once it has read everything: exit cleanly (a --cpu-prof profile is written then).
  process.once('SIGTERM', () => process.exit(0));
  void produce(JSON.parse(process.argv[3]) as TransportCase, (JSON.parse(process.argv[4] ?? 'null') as BenchSecurity | null) ?? undefined);
}

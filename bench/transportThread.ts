/**
 * The task thread of the transport benchmark: it packs records into buffers of the
 * shared network memory (producer), or decodes them (consumer), while the process's
 * main thread owns the sockets, as a TaskManager's task thread and network thread do.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { SharedSegments } from '../src/network/buffer/NetworkBufferPool.js';
import type { InputGate } from '../src/network/taskThread/consumer/InputGate.js';
import { RecordReader } from '../src/network/taskThread/consumer/RecordReader.js';
import { HandoverLink, type HandoverRings } from '../src/network/handover/HandoverLink.js';
import { TaskEnd } from '../src/network/taskThread/TaskEnd.js';
import { RebalanceSelector } from '../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../src/network/taskThread/writer/RecordWriter.js';
import { BUFFERS, PARTITION_ID, sampleRecords, type TransportCase } from './transportCases.js';

export interface TransportThreadData {
  role: 'produce' | 'consume';
  shared: SharedSegments;
  benchCase: TransportCase;
  rings: HandoverRings;
}

/** What the thread reports when its side is done. */
export interface TransportThreadResult {
  count: number;
  bytes: number;
}

const port = parentPort!;
const { role, shared, benchCase, rings } = workerData as TransportThreadData;
const n = benchCase.channels;
const link = HandoverLink.task(rings);
const end = new TaskEnd(link.port(port), shared, role === 'produce' ? [{ id: PARTITION_ID, numSubpartitions: n, compression: null }] : []);
link.handler = (entries) => end.handle(entries);
port.on('message', (message: unknown) => {
  link.drain();
  if (message === 'go') void (role === 'produce' ? produce() : consume()).then((result) => end.port.post(result));
});

async function produce(): Promise<TransportThreadResult> {
  const partition = end.partition(0);
  if (benchCase.workload === BUFFERS) {
    for (let i = 0; i < benchCase.records; i++) {
      const buffer = partition.pool.requestBuffer() ?? (await partition.pool.requestBufferAsync());
      buffer.size = buffer.capacity;
      partition.add(buffer, i % n);
    }
    await partition.finish();
    return { count: benchCase.records, bytes: benchCase.records * shared.segmentSize };
  }
  const records = sampleRecords(benchCase.workload);
  const writer = new RecordWriter<unknown>(partition, new RebalanceSelector());
  for (let i = 0; i < benchCase.records; i++) {
    const waiting = writer.emit(records[i & 1023]);
    if (waiting) await waiting;
  }
  await writer.close();
  return { count: writer.recordsOut, bytes: writer.bytesOut };
}

async function consume(): Promise<TransportThreadResult> {
  const gate = end.inputGate(0, Array.from({ length: n }, (_, subpartition) => ({ partitionId: PARTITION_ID, subpartition })));
  if (benchCase.workload === BUFFERS) return drain(gate);
  const reader = new RecordReader<unknown>(gate);
  let count = 0;
  await reader.forEach(() => void count++);
  return { count, bytes: reader.bytesIn };
}

/** Recycles every buffer unread. */
async function drain(gate: InputGate): Promise<TransportThreadResult> {
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

import fs from 'node:fs';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { InputGate } from '../../src/network/taskThread/consumer/InputGate.js';
import { LocalInputChannel } from '../../src/network/networkThread/consumer/LocalInputChannel.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import type { PartitionTypeName } from '../../src/rpc/TaskDeployment.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import { KeyGroupSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { forEachWord } from '../../src/job/Tokenizer.js';

/** What crosses the exchange: a word and how often one producer saw it. */
export type WordCount = [word: string, count: number];

export interface InProcessWordCountOptions {
  /** Corpus files; producer i of P reads files i, i+P, i+2P, ... */
  files: readonly string[];
  producers: number;
  consumers: number;
  exchange: PartitionTypeName;
  /** Where a blocking exchange spills; required for one. */
  spillDir?: string;
  /** The network memory to use; by default a pool of its own (64 MiB of 32 KiB buffers). */
  network?: NetworkBufferPool;
  /** Bytes a blocking partition keeps in memory before it spills (default 8 MiB). */
  blockingMemoryBudget?: number;
  /** The RecordWriter's buffer timeout in ms. */
  bufferTimeout?: number;
}

export interface InProcessWordCountResult {
  /** Each consumer task's counts; every word is in exactly one of them. */
  perConsumer: Map<string, number>[];
  /** Words the producers read (their input records). */
  words: number;
  /** [word, count] records shipped through the exchange, after map-side combining. */
  recordsShipped: number;
  bytesShipped: number;
}

/** Buffers a pipelined subpartition may queue before its producer waits. */
const BUFFERS_PER_SUBPARTITION = 4;

/**
 * Word count over P producer and C consumer tasks in one process, through the real
 * data plane: each producer tokenizes its share of the files, sums its own counts in
 * a Map (map-side combine), and emits [word, count] through a hash exchange on the
 * word; each consumer sums what reaches it. Pipelined exchanges run both sides at
 * once; blocking ones run the consumers once every producer finished.
 */
export async function runInProcessWordCount(options: InProcessWordCountOptions): Promise<InProcessWordCountResult> {
  const { producers, consumers, exchange } = options;
  for (const [name, value] of [['producers', producers], ['consumers', consumers]] as const) {
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, not ${value}`);
  }
  const network = options.network ?? new NetworkBufferPool({ totalBytes: 64 << 20 });
  const manager = new ResultPartitionManager();
  const ids = Array.from({ length: producers }, (_, p) => `wordcount-${p}`);
  const writers: RecordWriter<WordCount>[] = [];
  try {
    for (const id of ids) {
      const partition = createPartition(id, manager, network, options);
      writers.push(new RecordWriter<WordCount>(partition, new KeyGroupSelector((r: WordCount) => r[0]), options.bufferTimeout));
    }
    const produce = (): Promise<number[]> =>
      Promise.all(writers.map((writer, p) => produceShare(myShare(options.files, p, producers), writer)));
    const consume = (): Promise<Map<string, number>[]> =>
      Promise.all(Array.from({ length: consumers }, (_, c) => consumeSubpartition(manager, ids, c)));
    let words: number[];
    let perConsumer: Map<string, number>[];
    if (exchange === 'pipelined') [words, perConsumer] = await Promise.all([produce(), consume()]);
    else {
      words = await produce();
      perConsumer = await consume();
    }
    return {
      perConsumer,
      words: words.reduce((a, b) => a + b, 0),
      recordsShipped: writers.reduce((sum, w) => sum + w.recordsOut, 0),
      bytesShipped: writers.reduce((sum, w) => sum + w.bytesOut, 0),
    };
  } finally {
    for (const writer of writers) writer.abort();
    manager.releaseWhere(() => true);
  }
}

/** A partition whose pool holds a buffer per subpartition plus one, and room for a queue or the blocking budget. */
function createPartition(
  id: string,
  manager: ResultPartitionManager,
  network: NetworkBufferPool,
  options: InProcessWordCountOptions,
): ResultPartition {
  const n = options.consumers;
  const min = n + 1;
  const budget = options.blockingMemoryBudget ?? 8 << 20;
  const max = options.exchange === 'pipelined' ? n * BUFFERS_PER_SUBPARTITION + 1 : Math.ceil(budget / network.segmentSize) + min;
  const pool = new BufferPool(network, min, max, `pool of ${id}`);
  const { exchange: type, spillDir } = options;
  const partition = new ResultPartition({ id, type, numSubpartitions: n, pool, spillDir, memoryBudget: budget });
  manager.register(partition);
  return partition;
}

function myShare(files: readonly string[], producer: number, producers: number): string[] {
  return files.filter((_, i) => i % producers === producer);
}

/** One producer task: counts the words of its files, then ships each word once with its count. */
async function produceShare(files: string[], writer: RecordWriter<WordCount>): Promise<number> {
  const counts = new Map<string, number>();
  let words = 0;
  for (const file of files) {
    forEachWord(await fs.promises.readFile(file, 'utf8'), (word) => {
      counts.set(word, (counts.get(word) ?? 0) + 1);
      words++;
    });
  }
  for (const entry of counts) {
    const waiting = writer.emit(entry);
    if (waiting) await waiting;
  }
  await writer.close();
  return words;
}

/** One consumer task: sums the counts of subpartition c of every producer. */
async function consumeSubpartition(manager: ResultPartitionManager, ids: string[], c: number): Promise<Map<string, number>> {
  const gate = new InputGate();
  gate.setChannels(ids.map((partitionId, i) => new LocalInputChannel(i, { partitionId, subpartition: c }, manager, gate)));
  const sums = new Map<string, number>();
  await new RecordReader<WordCount>(gate).forEach(([word, count]) => {
    sums.set(word, (sums.get(word) ?? 0) + count);
  });
  return sums;
}

/** The most frequent words over all consumers' counts, most frequent first (ties by word). */
export function topWords(perConsumer: readonly Map<string, number>[], limit: number): WordCount[] {
  const all: WordCount[] = [];
  for (const counts of perConsumer) for (const entry of counts) all.push(entry);
  all.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return all.slice(0, limit);
}

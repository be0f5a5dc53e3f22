import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { writeCorpus } from '../../src/job/Corpus.js';
import { runInProcessWordCount, topWords } from '../helpers/inProcessWordCount.js';
import { forEachWord } from '../../src/job/Tokenizer.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import type { PartitionTypeName } from '../../src/rpc/TaskDeployment.js';
import { channelForKey } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { KiB, MiB, tempDir } from '../helpers/plane.js';

const work = tempDir('wordcount');
let files: string[] = [];
let reference = new Map<string, number>();

/** The plainest possible count: one loop, one Map. */
function referenceCount(paths: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const file of paths) forEachWord(fs.readFileSync(file, 'utf8'), (word) => counts.set(word, (counts.get(word) ?? 0) + 1));
  return counts;
}

beforeAll(() => {
  files = writeCorpus(path.join(work.dir, 'corpus'), 5, 200 * KiB, 42);
  reference = referenceCount(files);
});

afterAll(() => work.remove());

describe('in-process word count', () => {
  test.each<[number, number, PartitionTypeName]>([
    [3, 4, 'pipelined'],
    [3, 4, 'blocking'],
    [1, 1, 'pipelined'],
    [1, 1, 'blocking'],
  ])('%i producers x %i consumers, %s exchange: exactly the reference count', async (producers, consumers, exchange) => {
    const network = new NetworkBufferPool({ totalBytes: 16 * MiB, segmentSize: 4 * KiB });
    const spillDir = path.join(work.dir, `spill-${producers}-${consumers}-${exchange}`);
    // A small budget makes the blocking exchange spill.
    const result = await runInProcessWordCount({ files, producers, consumers, exchange, network, spillDir, blockingMemoryBudget: 16 * KiB });

    expect(result.perConsumer.length).toBe(consumers);
    const merged = new Map<string, number>();
    const problems: string[] = [];
    result.perConsumer.forEach((counts, c) => {
      for (const [word, count] of counts) {
        if (merged.has(word)) problems.push(`${word} reached two consumers`);
        if (channelForKey(word, consumers) !== c) problems.push(`${word} reached consumer ${c}, not its key group's`);
        merged.set(word, count);
      }
    });
    for (const [word, count] of reference) if (merged.get(word) !== count) problems.push(`${word}: ${merged.get(word)}, expected ${count}`);
    expect(problems.slice(0, 10)).toEqual([]);
    expect(merged.size).toBe(reference.size);
    const total = [...reference.values()].reduce((a, b) => a + b, 0);
    expect(result.words).toBe(total);
    expect(result.recordsShipped, 'combined per producer: at most one record per word and producer').toBeLessThanOrEqual(reference.size * producers);
    expect(result.recordsShipped).toBeGreaterThanOrEqual(reference.size);
    expect(network.segmentsInUse, 'every buffer back').toBe(0);
    expect(network.unreservedSegments, 'every pool destroyed').toBe(network.totalSegments);
    if (fs.existsSync(spillDir)) expect(fs.readdirSync(spillDir), 'no spill file left').toEqual([]);
  });

  test('topWords: most frequent first, ties by word', () => {
    const perConsumer = [new Map([['b', 2], ['a', 5]]), new Map([['c', 2], ['d', 9]])];
    expect(topWords(perConsumer, 3)).toEqual([
      ['d', 9],
      ['a', 5],
      ['b', 2],
    ]);
  });

  test('network memory too small for the partitions: fails, and gives back what it had reserved', async () => {
    const network = new NetworkBufferPool({ totalBytes: 8 * 4 * KiB, segmentSize: 4 * KiB });
    const run = runInProcessWordCount({ files, producers: 3, consumers: 2, exchange: 'pipelined', network });
    await expect(run).rejects.toMatchObject({ code: 'SPW_ERR_INSUFFICIENT_NETWORK_MEMORY' });
    expect(network.unreservedSegments).toBe(network.totalSegments);
  });

  test('rejects a task count that is not a positive integer', async () => {
    await expect(runInProcessWordCount({ files, producers: 0, consumers: 1, exchange: 'pipelined' })).rejects.toThrow(RangeError);
  });
});

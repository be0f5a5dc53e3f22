/**
 * `npm start`: word count over a generated corpus, in this process, through the real
 * data plane (P producer tasks -> hash exchange -> C consumer tasks). Prints the top
 * words and the throughput, and deletes the corpus it wrote.
 *
 *   node dist/src/cli/start.js [--producers 2] [--consumers 2] [--mb 20] [--exchange pipelined|blocking]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { writeCorpus } from '../job/Corpus.js';
import { runInProcessWordCount, topWords } from '../job/InProcessWordCount.js';
import type { PartitionType } from '../network/partition/ResultPartition.js';

const CORPUS_FILES = 8;

interface StartOptions {
  producers: number;
  consumers: number;
  bytes: number;
  exchange: PartitionType;
}

function parse(argv: string[]): StartOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      producers: { type: 'string', default: '2' },
      consumers: { type: 'string', default: '2' },
      mb: { type: 'string', default: '20' },
      exchange: { type: 'string', default: 'pipelined' },
    },
  });
  const positive = (name: string, text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, not "${text}"`);
    return value;
  };
  const exchange = values.exchange;
  if (exchange !== 'pipelined' && exchange !== 'blocking') throw new Error(`--exchange must be pipelined or blocking, not "${exchange}"`);
  return {
    producers: positive('producers', values.producers),
    consumers: positive('consumers', values.consumers),
    bytes: positive('mb', values.mb) * 1_000_000,
    exchange,
  };
}

async function run(options: StartOptions, work: string): Promise<void> {
  const { producers, consumers, exchange } = options;
  const files = writeCorpus(path.join(work, 'corpus'), CORPUS_FILES, Math.ceil(options.bytes / CORPUS_FILES), 1);
  const corpusBytes = files.reduce((sum, file) => sum + fs.statSync(file).size, 0);
  console.log(`spillway, in-process word count: ${producers} producer x ${consumers} consumer tasks, ${exchange} hash exchange`);
  console.log(`corpus: ${(corpusBytes / 1e6).toFixed(1)} MB in ${files.length} generated files\n`);

  const started = performance.now();
  const result = await runInProcessWordCount({ files, producers, consumers, exchange, spillDir: path.join(work, 'spill') });
  const seconds = (performance.now() - started) / 1000;

  console.log('top 10 words:');
  topWords(result.perConsumer, 10).forEach(([word, count], i) => {
    console.log(`  ${String(i + 1).padStart(2)}. ${word.padEnd(20)} ${count.toLocaleString('en-US').padStart(12)}`);
  });
  const distinct = result.perConsumer.reduce((sum, counts) => sum + counts.size, 0);
  console.log(`\n${result.words.toLocaleString('en-US')} records (words) counted in ${seconds.toFixed(2)} s: ${Math.round(result.words / seconds).toLocaleString('en-US')} records/s`);
  console.log(`${distinct.toLocaleString('en-US')} distinct words; ${result.recordsShipped.toLocaleString('en-US')} [word, count] records (${(result.bytesShipped / 1e6).toFixed(2)} MB) crossed the exchange after map-side combining`);
}

async function main(): Promise<number> {
  const options = parse(process.argv.slice(2));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-start-'));
  const cleanUp = (): void => fs.rmSync(work, { recursive: true, force: true });
  const interrupted = (): never => {
    cleanUp();
    process.exit(130);
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  try {
    await run(options, work);
    return 0;
  } finally {
    cleanUp();
  }
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`spillway start: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);

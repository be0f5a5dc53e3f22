/**
 * Micro-benchmarks of the per-record path: serializer and deserializer (with plain
 * msgpackr packing the same batches as the baseline, measured in the same run),
 * channel selectors and the buffer pool. `npm run bench:micro`.
 */
import os from 'node:os';
import { Packr, RESET_BUFFER_MODE, REUSE_BUFFER_MODE, Unpackr } from 'msgpackr';
import { Bench } from 'tinybench';
import { seededRandom, vocabulary } from '../src/job/Corpus.js';
import { BufferPool } from '../src/network/buffer/BufferPool.js';
import { NetworkBuffer, UNPOOLED } from '../src/network/buffer/NetworkBuffer.js';
import { DEFAULT_SEGMENT_SIZE, NetworkBufferPool } from '../src/network/buffer/NetworkBufferPool.js';
import { NEED_MORE, RecordDeserializer } from '../src/network/taskThread/serialization/RecordDeserializer.js';
import { RecordSerializer } from '../src/network/taskThread/serialization/RecordSerializer.js';
import { KeyGroupSelector, RangeSelector, RebalanceSelector, type ChannelSelector } from '../src/network/taskThread/writer/ChannelSelector.js';

/** Records per benchmark iteration: enough to fill many buffers and make timer cost negligible. */
const BATCH = 10_000;
/** Keeps results alive so that the work cannot be optimized away. */
let sink = 0;

interface Measured {
  name: string;
  /** Records (or operations) one iteration handles. */
  perIteration: number;
  /** Bytes one iteration handles, 0 where bytes mean nothing. */
  bytesPerIteration: number;
  fn: () => void;
}

type WordTuple = [string, number];

function wordTuples(): WordTuple[] {
  const random = seededRandom(1);
  const words = vocabulary(5000, random);
  return Array.from({ length: BATCH }, () => [words[Math.floor(random() ** 3 * words.length)], 1]);
}

/** About 100 bytes packed, every record the same shape. */
function objects100(): object[] {
  const random = seededRandom(2);
  return Array.from({ length: BATCH }, (_, i) => ({
    id: 1_000_000 + i,
    user: `user-${Math.floor(random() * 1e6)}`,
    score: random() * 1000,
    country: ['DE', 'FR', 'US', 'JP'][i % 4],
    tags: ['alpha', 'beta'],
    ts: 1_700_000_000_000 + i * 37,
    ok: random() < 0.5,
    note: 'a fixed-width note text here',
  }));
}

function records1k(): object[] {
  const text = Array.from({ length: 2000 }, (_, i) => String.fromCharCode(97 + ((i * 31) % 26))).join('');
  return Array.from({ length: BATCH / 10 }, (_, i) => ({ id: i, body: text.slice(i % 1000, (i % 1000) + 990) }));
}

/**
 * Feeds records to the serializer as RecordWriter does: a batch is staged once one
 * more record would about fill the buffer, and copied in; `full` takes a full buffer
 * and returns the one to fill next.
 */
function writeBatches(serializer: RecordSerializer, records: readonly unknown[], first: NetworkBuffer, full: (buffer: NetworkBuffer) => NetworkBuffer): NetworkBuffer {
  let buffer = first;
  const copy = (): void => {
    serializer.stage();
    while (!serializer.copyTo(buffer)) buffer = full(buffer);
  };
  for (const record of records) {
    serializer.add(record);
    if (serializer.isFull(buffer.capacity - buffer.size)) copy();
  }
  if (serializer.hasPending) copy();
  return buffer;
}

/** The records in our wire format: the filled buffers, copied out. */
function framed(records: readonly unknown[]): NetworkBuffer[] {
  const buffers: NetworkBuffer[] = [];
  const fresh = (): NetworkBuffer => new NetworkBuffer(Buffer.alloc(DEFAULT_SEGMENT_SIZE), UNPOOLED);
  buffers.push(writeBatches(new RecordSerializer(), records, fresh(), (buffer) => (buffers.push(buffer), fresh())));
  return buffers;
}

function serializerTask(name: string, records: readonly unknown[]): Measured {
  const serializer = new RecordSerializer();
  const buffer = new NetworkBuffer(Buffer.allocUnsafeSlow(DEFAULT_SEGMENT_SIZE), UNPOOLED);
  const bytes = framed(records).reduce((sum, b) => sum + b.size, 0);
  // A full buffer would be handed to the partition; here it is simply reused.
  const reuse = (full: NetworkBuffer): NetworkBuffer => ((full.size = 0), full);
  return {
    name: `serialize ${name}`,
    perIteration: records.length,
    bytesPerIteration: bytes,
    fn: () => {
      sink += writeBatches(serializer, records, buffer, reuse).size;
    },
  };
}

function deserializerTask(name: string, records: readonly unknown[]): Measured {
  const buffers = framed(records);
  const sizes = buffers.map((b) => b.size);
  return {
    name: `deserialize ${name}`,
    perIteration: records.length,
    bytesPerIteration: sizes.reduce((a, b) => a + b, 0),
    fn: () => {
      const deserializer = new RecordDeserializer();
      let count = 0;
      for (let i = 0; i < buffers.length; i++) {
        const buffer = new NetworkBuffer(buffers[i].segment, UNPOOLED);
        buffer.size = sizes[i];
        deserializer.setNextBuffer(buffer);
        while (deserializer.next() !== NEED_MORE) count++;
      }
      sink += count;
    },
  };
}

/** The records cut into arrays that pack into about one 32 KiB buffer each, as the serializer batches them. */
function batches(records: readonly unknown[]): unknown[][] {
  const bytes = new Packr({ sequential: true }).pack(records).length;
  const perBatch = Math.max(1, Math.floor(((DEFAULT_SEGMENT_SIZE * 15) / 16 / bytes) * records.length));
  const out: unknown[][] = [];
  for (let i = 0; i < records.length; i += perBatch) out.push(records.slice(i, i + perBatch));
  return out;
}

/**
 * Baseline: msgpackr alone, the same batches packed with a sequential Packr into
 * its reused buffer (the mode the serializer uses), no length, no copy into buffers.
 */
function packTask(name: string, records: readonly unknown[]): Measured {
  const packr = new Packr({ sequential: true });
  const arrays = batches(records);
  const bytes = arrays.reduce<number>((sum, batch) => sum + new Packr({ sequential: true }).pack(batch).length, 0);
  return {
    name: `msgpackr pack ${name}`,
    perIteration: records.length,
    bytesPerIteration: bytes,
    fn: () => {
      for (const batch of arrays) sink += packr.pack(batch, REUSE_BUFFER_MODE | RESET_BUFFER_MODE).length;
    },
  };
}

/** Baseline: msgpackr alone, the same batches unpacked in stream order with a sequential Unpackr. */
function unpackTask(name: string, records: readonly unknown[]): Measured {
  const packr = new Packr({ sequential: true });
  const packed = batches(records).map((batch) => Buffer.from(packr.pack(batch)));
  return {
    name: `msgpackr unpack ${name}`,
    perIteration: records.length,
    bytesPerIteration: packed.reduce((sum, b) => sum + b.length, 0),
    fn: () => {
      const unpackr = new Unpackr({ sequential: true });
      for (const bytes of packed) sink += (unpackr.unpack(bytes) as unknown[]).length;
    },
  };
}

function selectorTask<T>(name: string, selector: ChannelSelector<T>, records: readonly T[]): Measured {
  selector.setup(8);
  return {
    name: `select ${name}, 8 channels`,
    perIteration: records.length,
    bytesPerIteration: 0,
    fn: () => {
      for (const record of records) sink += selector.selectChannel(record);
    },
  };
}

function poolTasks(): Measured[] {
  const global = new NetworkBufferPool({ totalBytes: 64 << 20 });
  const pool = new BufferPool(global, 16, 64, 'bench');
  const held: NetworkBuffer[] = [];
  return [
    {
      name: 'pool request + recycle (within min)',
      perIteration: 1000,
      bytesPerIteration: 0,
      fn: () => {
        for (let i = 0; i < 1000; i++) pool.requestBuffer()!.recycle();
      },
    },
    {
      name: 'pool 48 requests, 48 recycles (borrowing)',
      perIteration: 96,
      bytesPerIteration: 0,
      fn: () => {
        for (let i = 0; i < 48; i++) held.push(pool.requestBuffer()!);
        for (const buffer of held.splice(0)) buffer.recycle();
      },
    },
  ];
}

function tasks(): Measured[] {
  const words = wordTuples();
  const objects = objects100();
  const kilobytes = records1k();
  const random = seededRandom(3);
  const numbers = Array.from({ length: BATCH }, () => random() * 1000);
  const measured: Measured[] = [];
  for (const [name, records] of [
    ['word tuples', words],
    ['100 B objects', objects],
    ['1 KiB objects', kilobytes],
  ] as const) {
    measured.push(
      serializerTask(name, records),
      packTask(name, records),
      deserializerTask(name, records),
      unpackTask(name, records),
    );
  }
  measured.push(
    selectorTask('hash (key group of the word)', new KeyGroupSelector<WordTuple>((r) => r[0]), words),
    selectorTask('rebalance', new RebalanceSelector<WordTuple>(), words),
    selectorTask('range (7 boundaries)', new RangeSelector<number>((n) => n, [125, 250, 375, 500, 625, 750, 875]), numbers),
    ...poolTasks(),
  );
  return measured;
}

function format(value: number, digits = 1): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

async function main(): Promise<void> {
  const bench = new Bench({ time: 400, warmupTime: 100 });
  const measured = tasks();
  for (const m of measured) bench.add(m.name, m.fn);
  await bench.run();
  console.log(`Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores; ${DEFAULT_SEGMENT_SIZE / 1024} KiB buffers\n`);
  const header = ['task', 'M records/s', 'MB/s', 'ns/record', 'B/record', '±%'];
  const rows = bench.tasks.map((task, i) => {
    const m = measured[i];
    const result = task.result;
    if (!('period' in result)) return [m.name, `failed: ${'error' in result ? result.error.message : result.state}`, '', '', '', ''];
    const seconds = result.period / 1000;
    const perSecond = m.perIteration / seconds;
    return [
      m.name,
      format(perSecond / 1e6, 2),
      m.bytesPerIteration ? format(m.bytesPerIteration / seconds / 1e6, 0) : '',
      format(1e9 / perSecond, 1),
      m.bytesPerIteration ? format(m.bytesPerIteration / m.perIteration, 1) : '',
      format(result.latency.rme, 1),
    ];
  });
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]): string => cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
  console.log(`\n(serialize/deserialize batch records as RecordWriter does and include each batch's 4-byte length and the copy into ${DEFAULT_SEGMENT_SIZE / 1024} KiB buffers; sink ${sink > 0 ? 'ok' : 'empty'})`);
}

await main();

/**
 * The conformance suite every partition type passes, the built-in ones and one
 * registered from outside the engine (test/fixtures/InMemoryPartitionType.ts): random
 * records (tuples of one shape: shaped batches, ASCII or not) through random selectors into partitions of the type, every subpartition
 * read through a local channel and through a remote one (real TCP between two
 * ShuffleEnvironments), exact and in order per channel, every buffer back at the end,
 * and read again where the type promises it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { COMPRESSION_CODECS } from '../../src/network/buffer/CompressionCodec.js';
import type { InputGate } from '../../src/network/taskThread/consumer/InputGate.js';
import type { PartitionType } from '../../src/network/networkThread/partition/PartitionType.js';
import { partitionType, registerPartitionType } from '../../src/network/networkThread/partition/PartitionTypes.js';
import type { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ShuffleEnvironment, type ChannelSource } from '../../src/network/networkThread/ShuffleEnvironment.js';
import { BroadcastSelector, CustomSelector, KeyGroupSelector, RebalanceSelector, type ChannelSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import IN_MEMORY from '../fixtures/InMemoryPartitionType.js';
import { gateOver, KiB, MiB, readByChannel, tempDir, withSeed, writeAll } from '../helpers/plane.js';

type Row = [producer: number, seq: number, text: string];

const TEXT = Array.from({ length: 3000 }, (_, i) => String.fromCharCode(0x21 + ((i * 7919) % 0x5d))).join('');
/** Text that is not ASCII (and has no surrogate pair to cut in two): a shaped batch's other way of carrying strings. */
const WIDE_TEXT = Array.from({ length: 3000 }, (_, i) => 'aé中ж '[(i * 7919) % 5]).join('');

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SELECTORS = ['hash', 'rebalance', 'broadcast', 'custom'] as const;

function selectorOf(kind: (typeof SELECTORS)[number], producer: number): ChannelSelector<Row> {
  switch (kind) {
    case 'hash':
      return new KeyGroupSelector<Row>((r) => r[2].length % 37);
    case 'rebalance':
      return new RebalanceSelector<Row>(producer);
    case 'broadcast':
      return new BroadcastSelector<Row>();
    case 'custom':
      return new CustomSelector<Row>((r, n) => (r[1] * 7 + r[0]) % n);
  }
}

/** The channels each record of `rows` goes to, by a selector of the same kind: the reference. */
function expectedByConsumer(kind: (typeof SELECTORS)[number], producer: number, rows: Row[], consumers: number): Row[][] {
  const selector = selectorOf(kind, producer);
  selector.setup(consumers);
  const out: Row[][] = Array.from({ length: consumers }, () => []);
  for (const row of rows) {
    if (selector.isBroadcast) for (const list of out) list.push(row);
    else out[selector.selectChannel(row)].push(row);
  }
  return out;
}

const dirs: (() => void)[] = [];
let producerEnv: ShuffleEnvironment;
let consumerEnv: ShuffleEnvironment;

beforeAll(() => registerPartitionType(IN_MEMORY));
afterAll(() => {
  for (const remove of dirs.splice(0)) remove();
});

async function environments(segmentSize: number): Promise<void> {
  const make = async (name: string): Promise<ShuffleEnvironment> => {
    const { dir, remove } = tempDir(name);
    dirs.push(remove);
    // A small budget makes the spilling types write to disk; a small read pool makes readers take turns.
    const env = new ShuffleEnvironment({ memory: 48 * MiB, segmentSize, spillDir: dir, blockingMemoryBudget: 256 * KiB, readBuffers: 8 });
    await env.start();
    return env;
  };
  producerEnv = await make('conformance-producer');
  consumerEnv = await make('conformance-consumer');
}

/** A gate over subpartition `consumer` of every partition, from the producer's process or across TCP. */
function gateOf(partitions: ResultPartition[], consumer: number, remote: boolean): { gate: InputGate; close: () => void } {
  const env = remote ? consumerEnv : producerEnv;
  const sources: ChannelSource[] = partitions.map((p) => ({
    address: { partitionId: p.id, subpartition: consumer },
    remote: remote ? producerEnv.address : null,
  }));
  const { gate, pool } = gateOver(env, sources, `gate of consumer ${consumer}`);
  return { gate, close: () => pool?.destroy() };
}

async function readAll(partitions: ResultPartition[], consumers: number, remoteOf: (c: number) => boolean): Promise<Row[][][]> {
  return Promise.all(
    Array.from({ length: consumers }, async (_, c) => {
      const { gate, close } = gateOf(partitions, c, remoteOf(c));
      try {
        return await readByChannel<Row>(gate);
      } finally {
        gate.close();
        close();
      }
    }),
  );
}

function check(type: PartitionType, got: Row[][][], expected: Row[][][], how: string): void {
  got.forEach((byProducer, c) =>
    byProducer.forEach((rows, p) => {
      const want = expected[p][c];
      expect(rows.length, `${type.name} ${how}: consumer ${c} from producer ${p}: records`).toBe(want.length);
      for (let i = 0; i < want.length; i++) {
        if (rows[i][0] !== want[i][0] || rows[i][1] !== want[i][1] || rows[i][2] !== want[i][2]) {
          throw new Error(`${type.name} ${how}: consumer ${c} from producer ${p}: record ${i} is [${rows[i][0]}, ${rows[i][1]}], expected [${want[i][0]}, ${want[i][1]}]`);
        }
      }
    }),
  );
}

async function runSeed(type: PartitionType, seed: number): Promise<void> {
  const rng = random(seed);
  await environments(rng() < 0.5 ? 4 * KiB : 32 * KiB);
  try {
    const producers = 1 + Math.floor(rng() * 3);
    const consumers = 2 + Math.floor(rng() * 3);
    const kind = SELECTORS[Math.floor(rng() * SELECTORS.length)];
    const compression = [null, ...COMPRESSION_CODECS][Math.floor(rng() * (COMPRESSION_CODECS.length + 1))];
    const timeout = rng() < 0.5 ? -1 : 5;
    const text = rng() < 0.5 ? TEXT : WIDE_TEXT;
    const rows: Row[][] = Array.from({ length: producers }, (_, p) =>
      Array.from({ length: 200 + Math.floor(rng() * 2000) }, (_, i) => {
        const start = Math.floor(rng() * 2000);
        return [p, i, text.slice(start, start + Math.floor(rng() * 900))] as Row;
      }),
    );
    const expected = rows.map((list, p) => expectedByConsumer(kind, p, list, consumers));
    const partitions = rows.map((_, p) => producerEnv.createPartition(`job-${seed}/0/${p}`, type, consumers, compression));
    const write = (): Promise<void> =>
      Promise.all(partitions.map((partition, p) => writeAll(new RecordWriter<Row>(partition, selectorOf(kind, p), timeout), rows[p]))).then(() => {});
    // Even consumers read locally, odd ones over TCP; a re-read swaps them.
    const remoteOf = (c: number): boolean => (c + seed) % 2 === 1;
    let got: Row[][][];
    if (type.isPipelined) [got] = await Promise.all([readAll(partitions, consumers, remoteOf), write()]);
    else {
      await write();
      got = await readAll(partitions, consumers, remoteOf);
    }
    check(type, got, expected, `(${kind}, compression ${compression})`);
    if (type.isReReadable) {
      const again = await readAll(partitions, consumers, (c) => !remoteOf(c));
      check(type, again, expected, `read again (${kind}, compression ${compression})`);
    } else {
      for (const partition of partitions) expect(partition.isReleased, `${type.name}: released once consumed`).toBe(true);
    }
    for (const partition of partitions) producerEnv.partitions.release(partition.id);
  } finally {
    await Promise.all([producerEnv.close(), consumerEnv.close()]);
  }
  expect(producerEnv.buffers.segmentsInUse, `${type.name}: producer segments in use`).toBe(0);
  expect(consumerEnv.buffers.segmentsInUse, `${type.name}: consumer segments in use`).toBe(0);
}

describe('partition type conformance', () => {
  const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  test.each(['pipelined', 'blocking', 'sort-merge', 'hybrid', 'in-memory'])(
    '%s: random records and selectors, local and remote channels, exact and in order per channel, re-read where promised, every buffer back',
    async (name) => {
      const type = partitionType(name);
      for (const seed of SEEDS) await withSeed(seed, () => runSeed(type, seed));
    },
    120_000,
  );
});

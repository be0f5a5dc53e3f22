/**
 * The handover between a task thread and the network thread, both ends run here
 * over a pair of shared rings: records written through a TaskEnd reach the partitions
 * of its NetworkEnd, and a second TaskEnd reads them back through local channels,
 * buffers passing by index only. Whatever happens, every buffer returns.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import type { PartitionTypeName } from '../../src/rpc/TaskDeployment.js';
import { ShuffleEnvironment } from '../../src/network/networkThread/ShuffleEnvironment.js';
import { createHandoverRings, HandoverLink } from '../../src/network/handover/HandoverLink.js';
import { NetworkEnd } from '../../src/network/networkThread/NetworkEnd.js';
import { TaskEnd } from '../../src/network/taskThread/TaskEnd.js';
import { KeyGroupSelector, RebalanceSelector } from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { KiB, tempDir, turn } from '../helpers/plane.js';
import { eventually } from '../helpers/eventually.js';

const SEGMENT = 4 * KiB;
const links: HandoverLink[] = [];
const dirs: (() => void)[] = [];
const NO_CONTROL = { postMessage: () => {} };

afterEach(() => {
  for (const link of links.splice(0)) link.close();
  for (const remove of dirs.splice(0)) remove();
});

function environment(memory = 4 << 20): ShuffleEnvironment {
  const { dir, remove } = tempDir('handover');
  dirs.push(remove);
  return new ShuffleEnvironment({ memory, segmentSize: SEGMENT, spillDir: dir, blockingMemoryBudget: 64 * KiB });
}

/** A task end and a network end joined by shared rings, as a task thread and its TaskManager are. */
function join(env: ShuffleEnvironment, outputs: { id: string; type: PartitionTypeName; subpartitions: number }[], inputs: number[], attach: (end: NetworkEnd, g: number) => void) {
  const rings = createHandoverRings();
  const [networkLink, taskLink] = [HandoverLink.network(rings), HandoverLink.task(rings)];
  links.push(networkLink, taskLink);
  const partitions = outputs.map((o) => env.createPartition(o.id, o.type, o.subpartitions));
  const finished: number[] = [];
  const taskEnd = new TaskEnd(taskLink.port(NO_CONTROL), env.buffers.arena.shared, outputs.map((o) => ({ id: o.id, numSubpartitions: o.subpartitions, compression: null })));
  const network: NetworkEnd = new NetworkEnd(env, networkLink.port(NO_CONTROL), partitions, inputs, 'task', {
    inputRequested: (g) => attach(network, g),
    partitionFinished: (p) => finished.push(p),
    overtaken: () => undefined,
  });
  networkLink.handler = (entries) => network.handle(entries);
  taskLink.handler = (entries) => taskEnd.handle(entries);
  return { taskEnd, network, partitions, finished };
}

function records(seed: number, count: number): [number, string][] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => [i, 'x'.repeat(Math.floor(random() * random() * 3000))]);
}

describe.each(['pipelined', 'blocking'] as const)('%s partitions through the handover', (type) => {
  test.each([1, 2, 3])('random records to 3 subpartitions arrive exactly and in order per channel, every buffer back (seed %i)', async (seed) => {
    const env = environment();
    const input = records(seed, 3000);
    const producer = join(env, [{ id: 'p', type, subpartitions: 3 }], [], () => {});
    const writer = new RecordWriter<[number, string]>(producer.taskEnd.partition(0), new KeyGroupSelector((r) => r[0] % 7), seed === 1 ? 0 : 5);
    const written = (async () => {
      for (const record of input) await writer.emit(record);
      await writer.close();
    })();
    const outputs = await Promise.all(
      [0, 1, 2].map(async (subpartition) => {
        const consumer = join(env, [], [1], (end, g) => end.attachInput(g, [{ address: { partitionId: 'p', subpartition }, remote: null }]));
        const got: [number, string][] = [];
        await new RecordReader<[number, string]>(consumer.taskEnd.inputGate(0, [{ partitionId: 'p', subpartition }])).forEach((r) => void got.push(r));
        await new Promise((r) => setTimeout(r, 10));
        consumer.network.reclaim();
        return got;
      }),
    );
    await written;
    expect(producer.finished).toEqual([0]);
    const all = outputs.flat().sort((a, b) => a[0] - b[0]);
    expect(all.length, 'nothing lost or duplicated').toBe(input.length);
    expect(all).toEqual(input);
    for (const got of outputs) expect(got.map((r) => r[0]), 'in order per channel').toEqual([...got.map((r) => r[0])].sort((a, b) => a - b));
    producer.network.reclaim();
    env.partitions.releaseWhere(() => true);
    expect(env.buffers.segmentsInUse, 'every buffer back').toBe(0);
    expect(env.buffers.unreservedSegments, 'every pool gone').toBe(env.buffers.totalSegments);
    await env.close();
  });
});

test('a task end that vanishes mid-write (a terminated thread) loses no buffer: reclaim() takes back what it held', async () => {
  const env = environment();
  const producer = join(env, [{ id: 'p', type: 'pipelined', subpartitions: 2 }], [], () => {});
  const writer = new RecordWriter<[number, string]>(producer.taskEnd.partition(0), new RebalanceSelector(0), -1);
  // Nobody reads: the writer fills the pool and waits for a grant that never comes.
  const writing = (async () => {
    for (const record of records(9, 100_000)) await writer.emit(record);
  })();
  writing.catch(() => {});
  await eventually('buffers of the pool taken by the writer', () => env.buffers.segmentsInUse > 0);
  producer.network.reclaim();
  env.partitions.releaseWhere(() => true, new Error('the task was terminated'));
  // A grant under way when the task vanished comes back once its wait resolves.
  await turn();
  expect(env.buffers.segmentsInUse, 'every buffer back').toBe(0);
  await env.close();
});

test('a gate reserved for more channels than network memory holds fails when the task is deployed, naming the setting', () => {
  const env = environment(64 * KiB);
  expect(() => join(env, [], [40], () => {})).toThrow(expect.objectContaining({ code: 'SPW_ERR_INSUFFICIENT_NETWORK_MEMORY', message: expect.stringContaining('task#0') }));
});

import { test, expect } from 'vitest';
import { NetworkBufferPool } from '../src/network/buffer/NetworkBufferPool.js';
import { BufferPool } from '../src/network/buffer/BufferPool.js';
import { ResultPartition } from '../src/network/partition/ResultPartition.js';
import { ResultPartitionManager } from '../src/network/partition/ResultPartitionManager.js';
import { RecordWriter } from '../src/network/writer/RecordWriter.js';
import { KeyGroupSelector } from '../src/network/writer/ChannelSelector.js';
import { InputGate } from '../src/network/consumer/InputGate.js';
import { LocalInputChannel } from '../src/network/consumer/LocalInputChannel.js';
import { RecordReader } from '../src/network/consumer/RecordReader.js';

test('smoke', async () => {
  const global = new NetworkBufferPool({ totalBytes: 64 << 20 });
  const manager = new ResultPartitionManager();
  const pool = new BufferPool(global, 4, 16);
  const part = new ResultPartition({ id: 'p', type: 'pipelined', numSubpartitions: 2, pool });
  manager.register(part);
  const writer = new RecordWriter<[string, number]>(part, new KeyGroupSelector((r) => r[0]));
  const got: unknown[][] = [[], []];
  const readers = [0, 1].map((c) => {
    const gate = new InputGate();
    gate.setChannels([new LocalInputChannel(0, { partitionId: 'p', subpartition: c }, manager, gate)]);
    return new RecordReader<[string, number]>(gate).forEach((r) => { got[c].push(r); });
  });
  for (let i = 0; i < 100000; i++) { const w = writer.emit([`w${i % 1000}`, i]); if (w) await w; }
  await writer.close();
  await Promise.all(readers);
  expect(got[0].length + got[1].length).toBe(100000);
  expect(global.segmentsInUse).toBe(0);
});

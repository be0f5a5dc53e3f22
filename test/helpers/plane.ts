import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import type { BufferPool } from '../../src/network/buffer/BufferPool.js';
import type { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { InputGate } from '../../src/network/taskThread/consumer/InputGate.js';
import { LocalInputChannel } from '../../src/network/networkThread/consumer/LocalInputChannel.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import type { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import type { ChannelSource, ShuffleEnvironment } from '../../src/network/networkThread/ShuffleEnvironment.js';
import type { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';

export const KiB = 1024;
export const MiB = 1024 * 1024;

/** A gate that reads subpartition `subpartition` of each partition, one channel per partition, in order. */
export function localGate(manager: ResultPartitionManager, partitionIds: string[], subpartition: number): InputGate {
  const gate = new InputGate();
  gate.setChannels(partitionIds.map((partitionId, i) => new LocalInputChannel(i, { partitionId, subpartition }, manager, gate)));
  return gate;
}

/**
 * A task's gate over the environment's real channels, read in this thread (in a
 * TaskManager the task thread reads them through the handover); remote ones share one
 * pool of exclusive plus floating buffers, which the caller destroys once the gate is closed.
 */
export function gateOver(env: ShuffleEnvironment, sources: ChannelSource[], name: string): { gate: InputGate; pool: BufferPool | null } {
  const gate = new InputGate();
  const pool = env.reserveGatePool(sources.length, name);
  gate.setChannels(env.createInputChannels(sources, gate, pool));
  return { gate, pool: pool.isDestroyed ? null : pool };
}

/** Reads a gate to its end; the records of each channel, in arrival order. */
export async function readByChannel<T>(gate: InputGate): Promise<T[][]> {
  const byChannel: T[][] = Array.from({ length: gate.numberOfChannels }, () => []);
  await new RecordReader<T>(gate).forEach((record, channel) => {
    byChannel[channel].push(record);
  });
  return byChannel;
}

/** Emits every record, waiting whenever the writer asks to (backpressure), then closes. */
export async function writeAll<T>(writer: RecordWriter<T>, records: Iterable<T>): Promise<void> {
  for (const record of records) {
    const waiting = writer.emit(record);
    if (waiting) await waiting;
  }
  await writer.close();
}

/**
 * Every buffer is back: each pool lends none, the global pool has every segment free,
 * and once the pools are destroyed (they are all there is) none of its memory is reserved.
 */
export function expectNoLeak(global: NetworkBufferPool, pools: BufferPool[]): void {
  for (const pool of pools) expect(pool.buffersInUse, `${pool.name} buffers in use`).toBe(0);
  expect(global.segmentsInUse, 'global segments in use').toBe(0);
  if (pools.every((pool) => pool.isDestroyed)) expect(global.unreservedSegments, 'unreserved segments').toBe(global.totalSegments);
}

/** A fresh directory under the OS temp dir and a function that removes it. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `spillway-${prefix}-`));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Resolves after the event loop ran everything already queued (I/O callbacks included). */
export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Tracks whether a promise settled, without awaiting it. */
export function track<T>(promise: Promise<T>): { readonly settled: boolean } {
  const state = { settled: false };
  promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

/**
 * How many seeds a property test runs: `count` in the suite, which keeps the unit tests at
 * seconds; SEEDS=N runs N each (a longer search, e.g. after a change to the data plane).
 */
export function seedCount(count: number): number {
  return process.env.SEEDS ? Number(process.env.SEEDS) : count;
}

/** Runs a check for one seed and names the seed if it fails, so that the failure can be rerun. */
export async function withSeed(seed: number, check: () => void | Promise<void>): Promise<void> {
  try {
    await check();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`seed ${seed}: ${message}`, { cause: error });
  }
}

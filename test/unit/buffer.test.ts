import { describe, expect, test } from 'vitest';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { BufferQueue } from '../../src/network/buffer/BufferQueue.js';
import { copyBytes } from '../../src/network/buffer/Bytes.js';
import type { NetworkBuffer } from '../../src/network/buffer/NetworkBuffer.js';
import { MAX_SEGMENT_SIZE, MIN_SEGMENT_SIZE, NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { KiB, MiB, track, turn } from '../helpers/plane.js';

const SEGMENT = 4 * KiB;

function globalPool(segments: number): NetworkBufferPool {
  return new NetworkBufferPool({ totalBytes: segments * SEGMENT, segmentSize: SEGMENT });
}

function take(pool: BufferPool, count: number): NetworkBuffer[] {
  return Array.from({ length: count }, () => {
    const buffer = pool.requestBuffer();
    if (buffer === null) throw new Error(`${pool.name} ran out`);
    return buffer;
  });
}

describe('NetworkBufferPool', () => {
  test('accepts segment sizes from 4 KiB to 1 MiB and nothing else', () => {
    for (const segmentSize of [MIN_SEGMENT_SIZE, 32 * KiB, MAX_SEGMENT_SIZE]) {
      expect(new NetworkBufferPool({ totalBytes: 8 * MiB, segmentSize }).segmentSize).toBe(segmentSize);
    }
    for (const segmentSize of [MIN_SEGMENT_SIZE - 1, MAX_SEGMENT_SIZE + 1, 4.5 * KiB + 0.5, 0]) {
      expect(() => new NetworkBufferPool({ totalBytes: 8 * MiB, segmentSize })).toThrow(expect.objectContaining({ code: 'SPW_ERR_CONFIG' }));
    }
    expect(MIN_SEGMENT_SIZE).toBe(4 * KiB);
    expect(MAX_SEGMENT_SIZE).toBe(MiB);
  });

  test('divides its memory into whole segments and refuses memory for none', () => {
    expect(new NetworkBufferPool({ totalBytes: 10 * SEGMENT + 100, segmentSize: SEGMENT }).totalSegments).toBe(10);
    expect(() => new NetworkBufferPool({ totalBytes: SEGMENT - 1, segmentSize: SEGMENT })).toThrow(expect.objectContaining({ code: 'SPW_ERR_CONFIG' }));
  });

  test('refuses to reserve more than its memory, and reserves again what a destroyed pool gave back', () => {
    const global = globalPool(8);
    const a = new BufferPool(global, 5, 8, 'a');
    expect(() => new BufferPool(global, 4, 8, 'b')).toThrow(expect.objectContaining({ code: 'SPW_ERR_INSUFFICIENT_NETWORK_MEMORY', message: expect.stringContaining('--memory') }));
    expect(global.unreservedSegments).toBe(3);
    a.destroy();
    expect(global.unreservedSegments).toBe(8);
    new BufferPool(global, 8, 8, 'c').destroy();
  });

  test('never allocates more segments than its memory holds, and shares it among pools that want the same', () => {
    const global = globalPool(4);
    const pools = [new BufferPool(global, 0, 4), new BufferPool(global, 0, 4)];
    const held = take(pools[0], 2);
    held.push(...take(pools[1], 2));
    expect(pools[0].requestBuffer()).toBeNull();
    expect(pools[1].requestBuffer()).toBeNull();
    expect(global.segmentsInUse).toBe(4);
    for (const buffer of held) buffer.recycle();
    expect(global.segmentsInUse).toBe(0);
  });
});

describe('NetworkBuffer', () => {
  test('recycled twice throws, and the segment returns to its pool only once', () => {
    const global = globalPool(4);
    const pool = new BufferPool(global, 0, 4);
    const [buffer] = take(pool, 1);
    buffer.recycle();
    expect(buffer.isRecycled).toBe(true);
    expect(() => buffer.recycle()).toThrow('buffer recycled twice');
    expect(() => buffer.retain()).toThrow('retain() of a recycled buffer');
    expect(pool.buffersInUse).toBe(0);
    expect(global.segmentsInUse).toBe(0);
  });

  test('each retain() adds one recycle() before the segment goes back', () => {
    const global = globalPool(4);
    const pool = new BufferPool(global, 0, 4);
    const [buffer] = take(pool, 1);
    buffer.retain().retain();
    buffer.recycle();
    buffer.recycle();
    expect(pool.buffersInUse).toBe(1);
    buffer.recycle();
    expect(pool.buffersInUse).toBe(0);
    expect(() => buffer.recycle()).toThrow();
  });
});

describe('BufferPool', () => {
  test('rejects bounds that hold no buffer or have min above max', () => {
    const global = globalPool(8);
    expect(() => new BufferPool(global, -1, 4)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INTERNAL' }));
    expect(() => new BufferPool(global, 0, 0)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INTERNAL' }));
    expect(() => new BufferPool(global, 5, 4)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INTERNAL' }));
    expect(global.unreservedSegments).toBe(8);
  });

  test('lends up to max; keeps min when buffers come back and returns the rest to the global pool', () => {
    const global = globalPool(8);
    const pool = new BufferPool(global, 2, 4);
    const held = take(pool, 4);
    expect(pool.requestBuffer()).toBeNull();
    expect(pool.buffersInUse).toBe(4);
    expect(global.segmentsInUse).toBe(4);
    held[0].recycle();
    expect(global.segmentsInUse).toBe(3);
    for (const buffer of held.slice(1)) buffer.recycle();
    expect(pool.buffersInUse).toBe(0);
    expect(global.segmentsInUse, 'the minimum stays with the pool').toBe(2);
    pool.destroy();
    expect(global.segmentsInUse).toBe(0);
    expect(global.unreservedSegments).toBe(8);
  });

  test('borrowing above min never eats into the minimum another pool reserved', () => {
    const global = globalPool(8);
    const a = new BufferPool(global, 4, 8, 'a');
    const b = new BufferPool(global, 2, 8, 'b');
    const fromA = take(a, 5);
    expect(a.requestBuffer(), 'a has its 4 and its share (1) of the 2 unreserved').toBeNull();
    const fromB = take(b, 3);
    expect(b.requestBuffer()).toBeNull();
    for (const buffer of [...fromA.slice(3), ...fromB]) buffer.recycle();
    a.destroy();
    b.destroy();
    expect(global.unreservedSegments, 'a keeps 3 reserved while its 3 are out').toBe(5);
    for (const buffer of fromA.slice(0, 3)) buffer.recycle();
    expect(global.segmentsInUse).toBe(0);
    expect(global.unreservedSegments).toBe(8);
  });

  test('an exhausted pool hands recycled buffers to its waiters, first come first served', async () => {
    const global = globalPool(8);
    const pool = new BufferPool(global, 1, 2);
    const held = take(pool, 2);
    const order: string[] = [];
    const first = pool.requestBufferAsync().then((buffer) => {
      order.push('first');
      return buffer;
    });
    const second = pool.requestBufferAsync().then((buffer) => {
      order.push('second');
      return buffer;
    });
    await turn();
    expect(order).toEqual([]);
    held[0].recycle();
    held[1].recycle();
    const buffers = await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
    expect(pool.buffersInUse).toBe(2);
    for (const buffer of buffers) buffer.recycle();
    pool.destroy();
    expect(global.segmentsInUse).toBe(0);
  });

  test('a new pool takes its share from one that borrowed all memory: the borrower gives segments back as they are recycled', async () => {
    const global = globalPool(4);
    const a = new BufferPool(global, 0, 4, 'a');
    const fromA = take(a, 4);
    const b = new BufferPool(global, 0, 4, 'b');
    const waiting = b.requestBufferAsync();
    const state = track(waiting);
    await turn();
    expect(state.settled).toBe(false);
    fromA[0].recycle();
    const buffer = await waiting;
    expect(b.buffersInUse).toBe(1);
    expect(a.buffersInUse).toBe(3);
    buffer.recycle();
    for (const rest of fromA.slice(1)) rest.recycle();
    expect(global.segmentsInUse).toBe(0);
  });

  test('destroy() rejects waiters, refuses requests, and buffers still out go back to the global pool', async () => {
    const global = globalPool(4);
    const pool = new BufferPool(global, 2, 2, 'the pool');
    const held = take(pool, 2);
    const waiting = pool.requestBufferAsync();
    pool.destroy();
    await expect(waiting).rejects.toThrow('the pool was destroyed while waiting for a buffer');
    expect(() => pool.requestBuffer()).toThrow('the pool is destroyed');
    expect(global.segmentsInUse).toBe(2);
    for (const buffer of held) buffer.recycle();
    expect(pool.buffersInUse).toBe(0);
    expect(global.segmentsInUse).toBe(0);
  });

  test('memory a destroyed pool had reserved reaches a pool that waits for it', async () => {
    const global = globalPool(4);
    const reserving = new BufferPool(global, 4, 4, 'reserving');
    const waiter = new BufferPool(global, 0, 4, 'waiter');
    expect(waiter.requestBuffer()).toBeNull();
    const waiting = waiter.requestBufferAsync();
    const state = track(waiting);
    reserving.destroy();
    await turn();
    expect(state.settled).toBe(true);
    (await waiting).recycle();
    expect(global.segmentsInUse).toBe(0);
  });

  test('buffers a destroyed pool had lent reach a waiting pool when recycled, and keep their reservation until then', async () => {
    const global = globalPool(4);
    const lending = new BufferPool(global, 4, 4, 'lending');
    const held = take(lending, 4);
    const waiter = new BufferPool(global, 0, 4, 'waiter');
    const waiting = waiter.requestBufferAsync();
    lending.destroy();
    expect(() => new BufferPool(global, 1, 1), 'memory still out is not promised again').toThrow(expect.objectContaining({ code: 'SPW_ERR_INSUFFICIENT_NETWORK_MEMORY' }));
    held[0].recycle();
    const buffer = await waiting;
    for (const rest of held.slice(1)) rest.recycle();
    buffer.recycle();
    expect(global.unreservedSegments).toBe(4);
    expect(global.segmentsInUse).toBe(0);
  });
});

describe('BufferQueue', () => {
  test('first in, first out across its internal compaction', () => {
    const queue = new BufferQueue<number>();
    const out: number[] = [];
    let next = 0;
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 100; i++) queue.push(next++);
      for (let i = 0; i < 60; i++) out.push(queue.shift()!);
    }
    expect(queue.peek()).toBe(out.length);
    out.push(...queue.drain());
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
  });
});

describe('copyBytes', () => {
  test('copies exactly the range, at every alignment, between shared and own memory in both directions', () => {
    const random = seededRandom(9);
    const shared = Buffer.from(new SharedArrayBuffer(4 * KiB));
    const own = Buffer.alloc(4 * KiB);
    for (const [source, target] of [[own, shared], [shared, own], [own, Buffer.alloc(4 * KiB)]]) {
      for (let i = 0; i < source.length; i++) source[i] = Math.floor(random() * 256);
      for (let round = 0; round < 300; round++) {
        const length = round < 40 ? round : Math.floor(random() * 2 * KiB);
        const from = Math.floor(random() * (source.length - length));
        const to = Math.floor(random() * (target.length - length));
        target.fill(0);
        copyBytes(source, from, target, to, length);
        const expected = Buffer.alloc(target.length);
        source.copy(expected, to, from, from + length);
        expect(target.equals(expected), `${length} bytes from ${from} to ${to}`).toBe(true);
      }
    }
  });
});

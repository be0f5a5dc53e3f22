import { describe, expect, test } from 'vitest';
import { DataType, unpooledBuffer, type NetworkBuffer } from '../../src/network/buffer/NetworkBuffer.js';
import { InputGate } from '../../src/network/taskThread/consumer/InputGate.js';
import { PipelinedSubpartition } from '../../src/network/networkThread/partition/PipelinedSubpartition.js';
import type { ResultSubpartitionView } from '../../src/network/networkThread/partition/ResultSubpartition.js';
import { eventBuffer, eventOf, EventType, type Barrier } from '../../src/network/Events.js';
import { ThreadInputChannel } from '../../src/network/taskThread/ThreadInputChannel.js';
import { BarrierHandler, type ChannelState } from '../../src/runtime/checkpoint/BarrierHandler.js';
import { seededRandom } from '../../src/job/Corpus.js';
import type { ReaderState } from '../../src/network/taskThread/serialization/RecordDeserializer.js';
import type { InputInFlight } from '../../src/runtime/checkpoint/InFlightData.js';

/** A data buffer holding record ids (their bytes stand for the serialized records). */
function data(ids: number[]): NetworkBuffer {
  return unpooledBuffer(Buffer.from(JSON.stringify(ids)), DataType.DATA);
}

function idsOf(buffer: NetworkBuffer): number[] {
  return JSON.parse(buffer.segment.subarray(0, buffer.size).toString()) as number[];
}

function barrier(id: number, unaligned: boolean): NetworkBuffer {
  return eventBuffer({ type: EventType.CHECKPOINT_BARRIER, id, timestamp: 0, unaligned, savepoint: false, stop: false });
}

const NO_READER = (): ReaderState => ({ structures: [], partial: new Uint8Array() });

function idsIn(copies: readonly Uint8Array[]): number[] {
  return copies.flatMap((bytes) => JSON.parse(Buffer.from(bytes).toString()) as number[]);
}

/**
 * One input of `channels` channels, each a producer's subpartition, the network's hop
 * (the view's buffers delivered to a task thread's channel) and the task's gate.
 */
function plane(channels: number) {
  const gate = new InputGate();
  const threadChannels = Array.from({ length: channels }, (_, c) => new ThreadInputChannel(c, { partitionId: `p${c}`, subpartition: 0 }, gate, () => undefined, () => undefined));
  gate.setChannels(threadChannels);
  const subpartitions = threadChannels.map((_, c) => new PipelinedSubpartition(0, `p${c}`));
  const views: ResultSubpartitionView[] = subpartitions.map((s) => s.createReadView(() => undefined));
  /** Moves the next buffer of channel c across the network, if one is queued at the producer. */
  const hop = (c: number): boolean => {
    const buffer = views[c].pollNext();
    if (buffer === null) return false;
    threadChannels[c].deliver(buffer);
    return true;
  };
  return { gate, subpartitions, hop };
}

describe('unaligned barriers overtake queued buffers', () => {
  test('a barrier put ahead in a subpartition gives copies of the data buffers it went ahead of, not the events, and they still follow it', () => {
    const sub = new PipelinedSubpartition(0, 'p');
    const view = sub.createReadView(() => undefined);
    sub.add(data([1]));
    sub.add(eventBuffer({ type: EventType.WATERMARK, timestamp: 5, origin: 0 }));
    sub.add(data([2]));
    const copies = sub.addPriority(barrier(1, true));
    expect(idsIn(copies)).toEqual([1, 2]);
    expect(eventOf(view.pollNext()!).type).toBe(EventType.CHECKPOINT_BARRIER);
    expect(idsOf(view.pollNext()!)).toEqual([1]);
  });

  test('a barrier put ahead at a consumer channel keeps copies of the data buffers queued there, given once', () => {
    const gate = new InputGate();
    const channel = new ThreadInputChannel(0, { partitionId: 'p', subpartition: 0 }, gate, () => undefined, () => undefined);
    gate.setChannels([channel]);
    channel.deliver(data([1]));
    channel.deliver(data([2]));
    channel.deliver(barrier(1, true));
    channel.deliver(data([3]));
    expect(gate.pollNextAny()!.isEvent).toBe(true);
    expect(idsIn(gate.takeOvertaken(0))).toEqual([1, 2]);
    expect(gate.takeOvertaken(0)).toEqual([]);
    expect([idsOf(gate.pollNextAny()!), idsOf(gate.pollNextAny()!), idsOf(gate.pollNextAny()!)]).toEqual([[1], [2], [3]]);
  });

  test('a channel that got a barrier while empty still gives the buffers that came behind it', () => {
    const gate = new InputGate();
    const channel = new ThreadInputChannel(0, { partitionId: 'p', subpartition: 0 }, gate, () => undefined, () => undefined);
    gate.setChannels([channel]);
    channel.deliver(barrier(1, true));
    channel.deliver(data([1]));
    channel.deliver(data([2]));
    const polled: (number[] | 'barrier')[] = [];
    for (let buffer = gate.pollNextAny(); buffer !== null; buffer = gate.pollNextAny()) polled.push(buffer.isEvent ? 'barrier' : idsOf(buffer));
    expect(polled).toEqual(['barrier', [1], [2]]);
  });
});

/**
 * A random run of one checkpoint over an input: each channel's producer writes buffers
 * of numbered records and, at a random point, the barrier (ahead of its queue when
 * unaligned); buffers cross the network and are read by the task in random turns.
 * Returns what the task had processed when it took its snapshot, what it stored with
 * the checkpoint, and everything that belonged before the barriers.
 */
async function runCheckpoint(seed: number, mode: 'aligned' | 'unaligned' | 'mixed', alignmentTimeoutMs?: number) {
  const random = seededRandom(seed);
  const channels = 1 + Math.floor(random() * 4);
  // Mixed: some producers went unaligned (their alignment timed out), the others not.
  const unalignedAt = Array.from({ length: channels }, () => mode === 'unaligned' || (mode === 'mixed' && random() < 0.5));
  const { gate, subpartitions, hop } = plane(channels);
  let next = 0;
  const written = subpartitions.map(() => 0);
  const plan = subpartitions.map(() => {
    const buffers = 2 + Math.floor(random() * 8);
    return { buffers, barrierAt: Math.floor(random() * (buffers + 1)) };
  });
  const before = new Set<number>();
  const barrierSent = subpartitions.map(() => false);
  const processed: number[] = [];
  let atSnapshot: Set<number> | null = null;
  let stored: ChannelState[] | null = null;
  let inputs: InputInFlight[] = [];
  const outputs: Uint8Array[] = [];
  let storedBytes = 0;
  let recordedBytes = 0;
  let declined: string | null = null;
  const handler = new BarrierHandler(
    [gate],
    {
      snapshot: () => void (atSnapshot = new Set(processed)),
      channelState: (_, channels, overtaken, bytes) => {
        stored = channels;
        inputs = overtaken;
        storedBytes = bytes;
      },
      decline: (_, reason) => void (declined = reason),
    },
    alignmentTimeoutMs,
    () => undefined,
  );
  const produce = (c: number): boolean => {
    if (!barrierSent[c] && written[c] === plan[c].barrierAt) {
      barrierSent[c] = true;
      if (unalignedAt[c]) outputs.push(...subpartitions[c].addPriority(barrier(1, true)));
      else subpartitions[c].add(barrier(1, false));
      return true;
    }
    if (written[c] === plan[c].buffers) return false;
    const ids = Array.from({ length: 1 + Math.floor(random() * 3) }, () => next++);
    if (!barrierSent[c]) for (const id of ids) before.add(id);
    subpartitions[c].add(data(ids));
    written[c]++;
    return true;
  };
  const consume = async (): Promise<boolean> => {
    await handler.poll();
    const buffer = gate.pollNextAny();
    if (buffer === null) return false;
    const c = gate.lastChannel;
    if (buffer.isEvent) {
      const event = eventOf(buffer);
      if (event.type === EventType.CHECKPOINT_BARRIER) await handler.onBarrier(0, c, event, gate.takeOvertaken(c), NO_READER);
      return true;
    }
    const ids = idsOf(buffer);
    const recording = handler.recording(0, c);
    processed.push(...ids);
    if (recording) {
      recordedBytes += buffer.size;
      handler.recorded(0, c, ids, buffer.size);
    }
    return true;
  };
  for (let idle = 0; idle < 200; ) {
    const c = Math.floor(random() * channels);
    const step = random();
    const moved = step < 0.4 ? produce(c) : step < 0.7 ? hop(c) : await consume();
    idle = moved ? 0 : idle + 1;
    if (alignmentTimeoutMs !== undefined && idle === 50) await new Promise((resolve) => setTimeout(resolve, alignmentTimeoutMs + 5));
  }
  // Everything still queued is read to the end.
  for (let moved = true; moved; ) {
    moved = false;
    for (let c = 0; c < channels; c++) while (produce(c) || hop(c)) moved = true;
    while (await consume()) moved = true;
  }
  handler.close();
  const copied = [...idsIn(inputs.flatMap((i) => i.buffers)), ...idsIn(outputs)];
  const copiedBytes = inputs.reduce((sum, i) => sum + i.buffers.reduce((n, b) => n + b.length, 0), 0);
  return { atSnapshot: atSnapshot as Set<number> | null, stored: stored as ChannelState[] | null, copied, storedBytes, recordedBytes: recordedBytes + copiedBytes, declined, before, processed };
}

describe('BarrierHandler: every record that belongs before the barriers is in the snapshot once', () => {
  test('aligned: the snapshot comes after exactly the records before every barrier', async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { atSnapshot, stored, declined, before, processed } = await runCheckpoint(seed, 'aligned');
      expect(declined, `seed ${seed}`).toBeNull();
      expect(stored, `seed ${seed}: an aligned checkpoint stores no records`).toBeNull();
      expect([...atSnapshot!].sort((a, b) => a - b), `seed ${seed}`).toEqual([...before].sort((a, b) => a - b));
      expect(new Set(processed).size, `seed ${seed}: nothing read twice`).toBe(processed.length);
    }
  });

  test('unaligned: what was processed at the snapshot, the records stored and the copies of what the barriers overtook (producer and consumer side) are the records before the barriers, each once', async () => {
    let overtook = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const { atSnapshot, stored, copied, storedBytes, recordedBytes, declined, before } = await runCheckpoint(seed, 'unaligned');
      expect(declined, `seed ${seed}`).toBeNull();
      const kept = (stored ?? []).flatMap((channel) => channel.records as number[]);
      overtook += copied.length;
      expect(storedBytes, `seed ${seed}: the in-flight bytes reported are those of the buffers stored`).toBe(recordedBytes);
      const covered = [...atSnapshot!, ...kept, ...copied].sort((a, b) => a - b);
      expect(covered, `seed ${seed}`).toEqual([...before].sort((a, b) => a - b));
    }
    expect(overtook, 'some runs copied buffers a barrier overtook').toBeGreaterThan(0);
  });

  test('an aligned checkpoint that waits past its alignment timeout, or meets an unaligned barrier, goes unaligned and still covers every record once', async () => {
    for (let seed = 1; seed <= 80; seed++) {
      const { atSnapshot, stored, copied, declined, before } = seed <= 40 ? await runCheckpoint(seed, 'aligned', 1) : await runCheckpoint(seed, 'mixed');
      expect(declined, `seed ${seed}`).toBeNull();
      const kept = (stored ?? []).flatMap((channel) => channel.records as number[]);
      expect([...atSnapshot!, ...kept, ...copied].sort((a, b) => a - b), `seed ${seed}`).toEqual([...before].sort((a, b) => a - b));
    }
  });

  test('a newer barrier subsumes the checkpoint under way (declined), a cancel declines it, an ended channel needs no barrier', async () => {
    const { gate } = plane(2);
    const events: string[] = [];
    const handler = new BarrierHandler([gate], { snapshot: (b) => void events.push(`snapshot ${b.id}`), channelState: () => undefined, decline: (id) => void events.push(`decline ${id}`) }, undefined, () => undefined);
    const aligned = (id: number): Barrier => ({ id, timestamp: 0, unaligned: false, savepoint: false, stop: false });
    await handler.onBarrier(0, 0, aligned(1), [], NO_READER);
    await handler.onBarrier(0, 0, aligned(2), [], NO_READER);
    await handler.onBarrier(0, 1, aligned(1), [], NO_READER);
    await handler.onBarrier(0, 1, aligned(2), [], NO_READER);
    await handler.onBarrier(0, 0, aligned(3), [], NO_READER);
    handler.onCancel(3);
    await handler.onBarrier(0, 0, aligned(4), [], NO_READER);
    await handler.onEnd(0, 1);
    handler.close();
    expect(events).toEqual(['decline 1', 'snapshot 2', 'decline 3', 'snapshot 4']);
  });
});

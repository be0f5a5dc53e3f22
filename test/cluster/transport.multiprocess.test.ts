/**
 * The TCP transport between separate Node processes on 127.0.0.1. Fixtures run
 * from dist/ (`npm run build` first). Every process is killed after each test.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { DataType, NetworkBuffer, UNPOOLED } from '../../src/network/buffer/NetworkBuffer.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { InputGate } from '../../src/network/taskThread/consumer/InputGate.js';
import { RecordReader } from '../../src/network/taskThread/consumer/RecordReader.js';
import { RemoteInputChannel, type RemoteAddress } from '../../src/network/networkThread/consumer/RemoteInputChannel.js';
import { RecordSerializer } from '../../src/network/taskThread/serialization/RecordSerializer.js';
import { ConnectionManager } from '../../src/network/networkThread/transport/ConnectionManager.js';
import { FrameDecoder, type ControlFrame } from '../../src/network/networkThread/transport/FrameDecoder.js';
import { encodeCloseRequest, encodeHandshake, encodePartitionRequest } from '../../src/network/networkThread/transport/FrameEncoder.js';
import { ClientHandshake } from '../../src/network/networkThread/transport/Handshake.js';
import { CONNECTION_WIDE, ErrorKind, FrameType, SERVER_AUTH_FRAMES, SERVER_FRAMES } from '../../src/network/networkThread/transport/Protocol.js';
import { OPEN_KEY } from '../../src/network/networkThread/transport/TransportSecurity.js';
import type { ChannelSpec, ConsumerDone } from '../fixtures/transportConsumer.js';
import type { ProducerStats } from '../fixtures/transportProducer.js';
import { bufferResponse, fakeServer, type FakeServer } from '../fixtures/transportFakeServer.js';
import { FixtureProcess, killAll } from '../fixtures/transportProcess.js';
import { LARGE_EVERY, RecordChecker, recordOf, textOf, type TestRecord, type Workload } from '../fixtures/transportRecords.js';
import { eventually, sleep } from '../helpers/eventually.js';

const MiB = 1 << 20;
const HOST = '127.0.0.1';

afterEach(killAll);

async function startProducer(config: object = {}): Promise<{ producer: FixtureProcess; port: number }> {
  const producer = new FixtureProcess('transportProducer', config);
  const { port } = await producer.next<{ type: 'ready'; port: number }>('ready');
  return { producer, port };
}

/** Channels over the n subpartitions of a partition written round-robin with `records` records. */
function roundRobinChannels(partitionId: string, n: number, records: number, workload: Workload): ChannelSpec[] {
  return Array.from({ length: n }, (_, c) => ({ partitionId, subpartition: c, first: c, stride: n, count: Math.ceil((records - c) / n), workload }));
}

function expectComplete(done: ConsumerDone, channels: ChannelSpec[]): void {
  expect(done.error).toBeNull();
  expect(done.channels).toEqual(channels.map((c) => ({ count: c.count, error: null })));
}

describe('transport between processes', () => {
  test('2 million mixed records over 4 channels arrive exactly once and in order, over one connection', async () => {
    // Every LARGE_EVERY-th record spans two to four 32 KiB buffers.
    expect(textOf(LARGE_EVERY - 1).length).toBeGreaterThan(40_000);
    const { producer, port } = await startProducer();
    const records = 2_000_000;
    producer.send({ type: 'produce', id: 'exact', partitionType: 'pipelined', subpartitions: 4, records, workload: 'mixed' });
    const channels = roundRobinChannels('exact', 4, records, 'mixed');
    const consumer = new FixtureProcess('transportConsumer', { host: HOST, port, channels });
    const done = await consumer.next<ConsumerDone>('done', 55_000);
    expectComplete(done, channels);
    expect(done.maxConnections).toBe(1);
    const stats = await producer.request<ProducerStats>({ type: 'stats' });
    expect(stats.maxServerConnections).toBe(1);
    expect(stats.serverConnections).toBe(1);
  }, 60_000);

  test('a channel that is not read blocks no other channel on its connection, and its producer stays within bounded memory', async () => {
    const { producer, port } = await startProducer();
    // Channel 0 carries 250 MB: far more than the 200 MiB bound if flow control did not hold it back.
    const blockedRecords = 250_000;
    const otherRecords = 100_000;
    for (let c = 0; c < 4; c++) {
      const kib = c === 0;
      const id = `hol-${c}`;
      producer.send({ type: 'produce', id, partitionType: 'pipelined', subpartitions: 1, records: kib ? blockedRecords : otherRecords, workload: kib ? 'kib' : 'mixed' });
    }
    const channels = [0, 1, 2, 3].map((c) => roundRobinChannels(`hol-${c}`, 1, c === 0 ? blockedRecords : otherRecords, c === 0 ? 'kib' : 'mixed')[0]);
    const exclusive = 2;
    const floating = 8;
    const consumer = new FixtureProcess('transportConsumer', { host: HOST, port, channels, exclusive, floating, blockChannel: 0 });

    const blocked = await consumer.next<{ type: 'blocked'; channels: ConsumerDone['channels']; stashed: number }>('blocked');
    expect(blocked.channels).toEqual(channels.map((c, i) => ({ count: i === 0 ? 0 : c.count, error: null })));
    // Channel 0 got no more than its credit allowed: what the gate's pool holds (the exclusive
    // buffers of the finished channels went back to it and became floating ones).
    expect(blocked.stashed).toBeGreaterThan(exclusive);
    expect(blocked.stashed).toBeLessThanOrEqual(channels.length * exclusive + floating);
    const before = await producer.request<ProducerStats>({ type: 'stats' });
    // A pause, not a wait: what is shown is that nothing happens in it.
    await sleep(300);
    const during = await producer.request<ProducerStats>({ type: 'stats' });
    // Channel 0's producer is held back by credit (it waits for buffers), not buffering on the socket.
    expect(during.produced['hol-0']).toBe(before.produced['hol-0']);
    expect(during.produced['hol-0']).toBeLessThan(blockedRecords / 100);
    expect(during.maxRss).toBeLessThan(200 * MiB);

    consumer.send({ type: 'resume' });
    const done = await consumer.next<ConsumerDone>('done', 40_000);
    expectComplete(done, channels);
    expect(done.maxConnections).toBe(1);
    expect((await producer.request<ProducerStats>({ type: 'stats' })).maxRss).toBeLessThan(200 * MiB);
  }, 60_000);

  test('a spilled blocking partition is served after its producer finished, to two consumers in turn, beside a pipelined one', async () => {
    const spillDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-transport-'));
    try {
      const { producer, port } = await startProducer({ spillDir });
      const records = 200_000;
      producer.send({ type: 'produce', id: 'spill', partitionType: 'blocking', subpartitions: 4, records, workload: 'mixed', memoryBudget: MiB });
      const finished = await producer.next<{ type: 'finished'; bytesSpilled: number }>('finished');
      expect(finished.bytesSpilled).toBeGreaterThan(10 * MiB);
      producer.send({ type: 'produce', id: 'pipe', partitionType: 'pipelined', subpartitions: 2, records, workload: 'kib' });

      const spill = roundRobinChannels('spill', 4, records, 'mixed');
      const both = [...spill, ...roundRobinChannels('pipe', 2, records, 'kib')];
      const first = new FixtureProcess('transportConsumer', { host: HOST, port, channels: both });
      const firstDone = await first.next<ConsumerDone>('done');
      expectComplete(firstDone, both);
      expect(firstDone.maxConnections).toBe(1);
      first.send({ type: 'exit' });
      await first.exited;

      const second = new FixtureProcess('transportConsumer', { host: HOST, port, channels: spill });
      expectComplete(await second.next<ConsumerDone>('done'), spill);
    } finally {
      await killAll();
      fs.rmSync(spillDir, { recursive: true, force: true });
    }
  }, 60_000);

  test('bad input closes only the offending connection; a well-behaved client goes on reading from the same server', async () => {
    const spillDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-transport-'));
    const connections = new ConnectionManager({ idleTimeoutMs: 60_000, log: () => {} });
    const global = new NetworkBufferPool({ totalBytes: 16 * MiB });
    try {
      const { producer, port } = await startProducer({ spillDir });
      const records = 20_000;
      producer.send({ type: 'produce', id: 'good', partitionType: 'blocking', subpartitions: 2, records, workload: 'mixed' });
      await producer.next('finished');
      const server = { host: HOST, port };
      const readGood = async (): Promise<void> => {
        const result = await readChannels(global, connections, server, roundRobinChannels('good', 2, records, 'mixed'));
        expect(result).toEqual([
          { count: records / 2, error: null },
          { count: records / 2, error: null },
        ]);
        expect(connections.connectionCount).toBe(1);
      };
      await readGood();

      let logged = 0;
      const expectLogged = async (pattern: RegExp): Promise<void> => {
        await eventually(`log line ${logged + 1} of the producer`, () => producer.all('log').length > logged, { everyMs: 20 });
        const logs = producer.all<{ type: 'log'; message: string }>('log');
        expect(logs.length).toBe(logged + 1);
        expect(logs[logged].message).toMatch(pattern);
        logged++;
      };
      const handshake = encodeHandshake();
      const garbage = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251));

      // Random bytes instead of a handshake: told why, then closed.
      let reply = await rawExchange(port, garbage);
      expect(reply.closed).toBe(true);
      expect(reply.frames).toEqual([expect.objectContaining({ type: FrameType.ERROR_RESPONSE, receiverId: CONNECTION_WIDE })]);
      await expectLogged(/bad handshake: magic/);
      await readGood();

      // A handshake of another protocol version.
      reply = await rawExchange(port, encodeHandshake(1));
      expect(reply.closed).toBe(true);
      await expectLogged(/protocol version 1/);
      await readGood();

      // Random bytes after a good preamble, before authentication.
      reply = await rawExchange(port, Buffer.concat([handshake, garbage]));
      expect(reply.closed).toBe(true);
      await expectLogged(/protocol error/);
      await readGood();

      // Random bytes after authentication.
      reply = await rawExchange(port, garbage, { authenticate: true });
      expect(reply.closed).toBe(true);
      await expectLogged(/protocol error/);
      await readGood();

      // A frame cut short by the end of the connection.
      reply = await rawExchange(port, encodePartitionRequest(1, 'good', 0, 2).subarray(0, 11), { end: true, authenticate: true });
      expect(reply.closed).toBe(true);
      await expectLogged(/truncated/);
      await readGood();

      // A length far above the maximum: refused from the five bytes of the frame head.
      const oversized = Buffer.from([0x7f, 0xff, 0xff, 0xff, FrameType.PARTITION_REQUEST]);
      reply = await rawExchange(port, oversized, { authenticate: true });
      expect(reply.closed).toBe(true);
      await expectLogged(/PartitionRequest frame length 2147483647 is outside/);
      await readGood();

      // An unknown frame type.
      reply = await rawExchange(port, Buffer.from([0, 0, 0, 1, 99]), { authenticate: true });
      expect(reply.closed).toBe(true);
      await expectLogged(/unknown frame type 99/);
      await readGood();

      // A request for a partition that does not exist: an error for that request, the connection stays.
      reply = await rawExchange(port, encodePartitionRequest(7, 'missing', 0, 2), { waitForFrames: 1, authenticate: true });
      expect(reply.closed).toBe(false);
      expect(reply.frames).toEqual([
        { type: FrameType.ERROR_RESPONSE, receiverId: 7, kind: ErrorKind.PARTITION_NOT_FOUND, message: 'partition missing not found' },
      ]);
      const retry = { initialBackoffMs: 5, maxBackoffMs: 40, timeoutMs: 300 };
      const [missing] = await readChannels(global, connections, server, [{ ...roundRobinChannels('missing', 1, 1, 'mixed')[0] }], retry);
      expect(missing.error).toMatch(new RegExp(`partition missing not found on TaskManager ${HOST}:${port} after \\d+ requests`));
      await readGood();

      // A buffer with a wrong sequence number (from a rogue server): that channel fails, nothing is lost silently.
      const rogue = await gapServer();
      try {
        const [gap] = await readChannels(global, connections, rogue.address, roundRobinChannels('any', 1, 2, 'mixed'));
        expect(gap.count).toBe(1);
        expect(gap.error).toMatch(/buffer 2 arrived where buffer 1 was expected/);
      } finally {
        rogue.close();
      }
      await eventually('the rogue server\'s connection closed', () => connections.connectionCount <= 1, { everyMs: 20 });
      await readGood();

      expect(producer.all('log').length).toBe(logged);
      expect((await producer.request<ProducerStats>({ type: 'stats' })).serverConnections).toBe(1);
    } finally {
      await connections.close();
      await killAll();
      fs.rmSync(spillDir, { recursive: true, force: true });
    }
  }, 60_000);

  test('a producer that dies fails every channel on its connection as the connection drops', async () => {
    const { producer, port } = await startProducer();
    producer.send({ type: 'produce', id: 'endless', partitionType: 'pipelined', subpartitions: 4, records: 1e9, workload: 'kib' });
    const connections = new ConnectionManager({ log: () => {} });
    const global = new NetworkBufferPool({ totalBytes: 16 * MiB });
    const gate = new InputGate();
    const pool = new BufferPool(global, 8, 16);
    const channels = [0, 1, 2, 3].map(
      (c) => new RemoteInputChannel(c, { partitionId: 'endless', subpartition: c }, { host: HOST, port }, connections, gate, pool),
    );
    gate.setChannels(channels);
    let received = 0;
    const reading = new RecordReader<TestRecord>(gate).forEach(() => {
      if (++received === 10_000) process.kill(producer.pid, 'SIGKILL');
    });
    await expect(reading).rejects.toThrow(new RegExp(`TaskManager ${HOST}:${port}`));
    for (const channel of channels) expect(() => channel.pollNext()).toThrow(expect.objectContaining({ code: 'SPW_ERR_CONNECTION_LOST' }));
    expect(connections.connectionCount).toBe(0);
    pool.destroy();
    expect(global.segmentsInUse).toBe(0);
  }, 30_000);
});

/** Reads the channels in this process with a RemoteInputChannel each; returns what each got. */
async function readChannels(
  global: NetworkBufferPool,
  connections: ConnectionManager,
  remote: RemoteAddress,
  specs: ChannelSpec[],
  retry?: { initialBackoffMs: number; maxBackoffMs: number; timeoutMs: number },
): Promise<{ count: number; error: string | null }[]> {
  const gate = new InputGate();
  const pool = new BufferPool(global, specs.length * 2, specs.length * 2 + 4);
  const channels = specs.map(
    (spec, i) => new RemoteInputChannel(i, { partitionId: spec.partitionId, subpartition: spec.subpartition }, remote, connections, gate, pool, { retry }),
  );
  gate.setChannels(channels);
  const checkers = specs.map((spec) => new RecordChecker(spec.workload, spec.first, spec.stride));
  let failure: string | null = null;
  try {
    await new RecordReader<TestRecord>(gate).forEach((record, channel) => checkers[channel].check(record));
  } catch (error) {
    failure = (error as Error).message;
  }
  pool.destroy();
  return checkers.map((c) => ({ count: c.count, error: c.error ?? failure }));
}

/**
 * Connects, sends bytes (with authenticate, after the handshake, with the open key), and
 * collects what the server answers until it closes (or, with waitForFrames, until that
 * many frames came after the handshake).
 */
function rawExchange(
  port: number,
  bytes: Buffer,
  options: { end?: boolean; waitForFrames?: number; authenticate?: boolean } = {},
): Promise<{ closed: boolean; frames: ControlFrame[] }> {
  return new Promise((resolve, reject) => {
    const frames: ControlFrame[] = [];
    const handshake = new ClientHandshake(OPEN_KEY);
    const send = (): void => void (options.end ? socket.end(bytes) : socket.write(bytes));
    const decoder = new FrameDecoder(
      {
        onControlFrame: (frame) => {
          if (frame.type === FrameType.AUTH_NONCE) return void socket.write(handshake.onNonce(frame.value));
          if (frame.type === FrameType.AUTH_PROOF) {
            handshake.onProof(frame.value);
            decoder.accept(SERVER_FRAMES);
            return send();
          }
          frames.push(frame);
          if (frames.length === options.waitForFrames) {
            socket.end(encodeCloseRequest());
            resolve({ closed: false, frames });
          }
        },
        onBufferHeader: () => null,
        onBufferPayload: () => {},
      },
      options.authenticate ? SERVER_AUTH_FRAMES : SERVER_FRAMES,
    );
    const socket = net.connect({ host: HOST, port }, () => {
      if (options.authenticate) socket.write(Buffer.concat([encodeHandshake(), handshake.start()]));
      else send();
    });
    socket.on('data', (chunk: Buffer) => decoder.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve({ closed: true, frames }));
    setTimeout(() => reject(new Error('the server neither answered nor closed')), 5000).unref();
  });
}

/** A server that answers any request with buffer 0, then buffer 2: a gap. */
function gapServer(): Promise<FakeServer> {
  const serializer = new RecordSerializer();
  const payload = new NetworkBuffer(Buffer.alloc(32 * 1024), UNPOOLED);
  serializer.serialize(recordOf('mixed', 0));
  serializer.copyTo(payload);
  return fakeServer(({ receiverId }, socket) => {
    for (const sequence of [0, 2]) socket.write(bufferResponse(receiverId, sequence, 0, DataType.DATA, payload.bytes()));
  });
}

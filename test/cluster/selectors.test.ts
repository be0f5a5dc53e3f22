import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { NetworkBufferPool } from '../../src/network/buffer/NetworkBufferPool.js';
import { BufferPool } from '../../src/network/buffer/BufferPool.js';
import { ResultPartition } from '../../src/network/networkThread/partition/ResultPartition.js';
import { ResultPartitionManager } from '../../src/network/networkThread/partition/ResultPartitionManager.js';
import {
  BroadcastSelector,
  CustomSelector,
  ForwardSelector,
  KeyGroupSelector,
  keyGroupOf,
  RangeSelector,
  RebalanceSelector,
  type ChannelSelector,
} from '../../src/network/taskThread/writer/ChannelSelector.js';
import { RecordWriter } from '../../src/network/taskThread/writer/RecordWriter.js';
import { KiB, expectNoLeak, localGate, readByChannel, writeAll } from '../helpers/plane.js';

const DIST_SELECTOR = fileURLToPath(new URL('../../dist/src/network/taskThread/writer/ChannelSelector.js', import.meta.url));

type JsonKey = string | number | JsonKey[] | { [key: string]: JsonKey };

/** Channels of the keys under a KeyGroupSelector, computed in a separate Node process from the compiled code. */
function channelsInChildProcess(keys: JsonKey[], channels: number): Promise<number[]> {
  if (!fs.existsSync(DIST_SELECTOR)) {
    throw new Error(`${DIST_SELECTOR} is missing: run \`npm run build\` before this test`);
  }
  const script = `
    import { KeyGroupSelector } from ${JSON.stringify(new URL(`file://${DIST_SELECTOR}`).href)};
    // Decoded as a stream: a chunk may end inside a character.
    process.stdin.setEncoding('utf8');
    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const selector = new KeyGroupSelector((key) => key);
    selector.setup(${channels});
    process.stdout.write(JSON.stringify(JSON.parse(input).map((key) => selector.selectChannel(key))));
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(stdout) as number[]);
      else reject(new Error(`child process failed (${signal ?? `exit ${code}`}): ${stderr}`));
    });
    child.stdin.end(JSON.stringify(keys));
  });
}

/** Distinct strings of random length (1 to 12) and script. */
function distinctStrings(count: number, seed: number): string[] {
  const random = seededRandom(seed);
  const alphabet = 'abcdefghijklmnopqrstuvwxyzéß中文😀 -_';
  const keys = new Set<string>();
  while (keys.size < count) {
    let key = '';
    for (let i = 1 + Math.floor(random() * 12); i > 0; i--) key += alphabet[Math.floor(random() * alphabet.length)];
    keys.add(key);
  }
  return [...keys];
}

/** Distinct keys: mostly strings, then integers, floats and composite keys. */
function distinctKeys(count: number, seed: number): JsonKey[] {
  const result: JsonKey[] = distinctStrings(count * 0.7, seed);
  for (let i = 0; result.length < count * 0.85; i++) result.push(i - 5000);
  for (let i = 0; result.length < count * 0.95; i++) result.push((i + 0.5) * 1.37e-3);
  for (let i = 0; result.length < count; i++) result.push(i % 2 ? [`k${i}`, i] : { user: `u${i}`, region: i % 7 });
  return result;
}

function select<T>(selector: ChannelSelector<T>, records: readonly T[]): number[] {
  return records.map((record) => selector.selectChannel(record));
}

function expectEven(channels: number[], n: number, what: string): void {
  const counts = new Array<number>(n).fill(0);
  for (const channel of channels) counts[channel]++;
  const even = channels.length / n;
  for (const count of counts) {
    expect(Math.abs(count - even) / even, `${what}: ${counts.join(', ')}`).toBeLessThanOrEqual(0.2);
  }
}

describe('KeyGroupSelector (hash)', () => {
  test('100,000 distinct keys: one channel each, the same in a separately spawned Node process', async () => {
    const keys = distinctKeys(100_000, 1);
    const selector = new KeyGroupSelector<JsonKey>((key) => key);
    selector.setup(8);
    const here = select(selector, keys);
    expect(select(selector, keys), 'the same key twice').toEqual(here);
    expect(here.every((channel) => Number.isInteger(channel) && channel >= 0 && channel < 8)).toBe(true);
    const there = await channelsInChildProcess(keys, 8);
    expect(there.length).toBe(keys.length);
    const differing = there.findIndex((channel, i) => channel !== here[i]);
    expect(differing, differing >= 0 ? `key ${JSON.stringify(keys[differing])}` : '').toBe(-1);
  });

  test('100,000 distinct strings, and 100,000 consecutive integers, each spread over 8 channels within 20% of even', () => {
    const selector = new KeyGroupSelector<JsonKey>((key) => key);
    selector.setup(8);
    expectEven(select(selector, distinctStrings(100_000, 2)), 8, 'strings');
    expectEven(
      select(
        selector,
        Array.from({ length: 100_000 }, (_, i) => i),
      ),
      8,
      'integers',
    );
  });

  test('equal keys that are different values land together: copies, -0 and 0, object key order', () => {
    const selector = new KeyGroupSelector<unknown>((key) => key);
    selector.setup(5);
    const pairs: [unknown, unknown][] = [
      [{ a: 1, b: [2, 'x'] }, { b: [2, 'x'], a: 1 }],
      [-0, 0],
      [Buffer.from('abc'), new Uint8Array([97, 98, 99])],
      [12345678901234567890n, BigInt('12345678901234567890')],
      ['ß', 'ß'.slice()],
    ];
    for (const [a, b] of pairs) expect(selector.selectChannel(a)).toBe(selector.selectChannel(b));
  });

  test('key groups are those of every earlier version, whose checkpoints and savepoints hold state by key group', () => {
    // [key, key group of 128, key group of 32768], taken from the code before hashes became int32s.
    const pinned: [unknown, number, number][] = [
      ['', 11, 31755],
      ['a', 25, 6169],
      ['word', 98, 28770],
      ['Spillway', 94, 29406],
      ['ünïcødé', 109, 27117],
      ['😀', 58, 1978],
      [0, 0, 0],
      [1, 55, 10423],
      [-1, 57, 28473],
      [42, 92, 19804],
      [2147483647, 40, 3752],
      [-2147483648, 32, 26016],
      [2147483648, 5, 14597],
      [1.5, 28, 3996],
      [-0.25, 20, 32532],
      [1e300, 66, 21058],
      [Number.MAX_SAFE_INTEGER, 47, 12847],
      [true, 75, 7755],
      [false, 71, 9159],
      [null, 114, 29554],
      [[1, 'a'], 10, 29578],
      [['x', ['y', 2]], 78, 15054],
      [{ b: 1, a: 'z' }, 27, 23835],
      [10n, 126, 16766],
    ];
    const groups = pinned.map(([key]) => [keyGroupOf(key), keyGroupOf(key, 32768)]);
    expect(groups).toEqual(pinned.map(([, small, large]) => [small, large]));
  });

  test('a key that cannot be hashed (a symbol, a function, either inside an array or object) fails with SPW_ERR_INVALID_KEY', () => {
    const selector = new KeyGroupSelector<unknown>((record) => record);
    selector.setup(4);
    for (const key of [Symbol('k'), () => 1, [1, Symbol('k')], { a: 1, f: () => 1 }]) {
      expect(() => keyGroupOf(key), String(typeof key)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_KEY' }));
      expect(() => selector.selectChannel(key)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_KEY' }));
    }
  });

  test('rejects a max parallelism that is not a positive integer, and more channels than key groups', () => {
    expect(() => new KeyGroupSelector((k) => k, 0)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
    expect(() => new KeyGroupSelector((k) => k, 2.5)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
    expect(() => new KeyGroupSelector((k) => k, 32769)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
    expect(() => new KeyGroupSelector((k) => k, 4).setup(5)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB' }));
  });
});

describe('the other selectors', () => {
  test('rebalance is round robin from its start, for any channel count and start', () => {
    const random = seededRandom(5);
    for (let run = 0; run < 200; run++) {
      const n = 1 + Math.floor(random() * 16);
      const start = Math.floor(random() * 100) - 50;
      const selector = new RebalanceSelector<unknown>(start);
      selector.setup(n);
      const first = ((start % n) + n) % n;
      const expected = Array.from({ length: 3 * n + 1 }, (_, i) => (first + i) % n);
      expect(select(selector, expected), `n=${n} start=${start}`).toEqual(expected);
    }
    expect(() => new RebalanceSelector(1.5)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INTERNAL' }));
  });

  test('range: every key in channel i is below boundary i and not below boundary i-1', () => {
    const random = seededRandom(6);
    for (let run = 0; run < 100; run++) {
      const n = 1 + Math.floor(random() * 10);
      const boundaries = Array.from({ length: n - 1 }, () => Math.floor(random() * 1000)).sort((a, b) => a - b);
      const selector = new RangeSelector<number>((key) => key, boundaries);
      selector.setup(n);
      for (let i = 0; i < 200; i++) {
        const key = random() < 0.2 ? boundaries[Math.floor(random() * boundaries.length)] ?? 0 : random() * 1200 - 100;
        const channel = selector.selectChannel(key);
        const context = `key ${key} -> ${channel} of boundaries [${boundaries}]`;
        expect(channel >= 0 && channel < n, context).toBe(true);
        if (channel > 0) expect(key >= boundaries[channel - 1], context).toBe(true);
        if (channel < n - 1) expect(key < boundaries[channel], context).toBe(true);
      }
    }
  });

  test('range over strings, and bad boundaries refused', () => {
    const selector = new RangeSelector<string>((key) => key, ['g', 'p']);
    selector.setup(3);
    expect(['a', 'f', 'g', 'o', 'p', 'z'].map((key) => selector.selectChannel(key))).toEqual([0, 0, 1, 1, 2, 2]);
    expect(() => new RangeSelector((key) => key, [3, 1])).toThrow('range boundaries are not sorted');
    expect(() => new RangeSelector((key) => key, [1, 3]).setup(4)).toThrow('4 channels need 3 boundaries, not 2');
  });

  test('custom: in-range answers pass, out-of-range answers are refused', () => {
    const answers = [0, 3, 4, -1, 1.5, Number.NaN];
    const selector = new CustomSelector<number>((record) => answers[record]);
    selector.setup(4);
    expect(selector.selectChannel(0)).toBe(0);
    expect(selector.selectChannel(1)).toBe(3);
    for (let i = 2; i < answers.length; i++) expect(() => selector.selectChannel(i), `answer ${answers[i]}`).toThrow(expect.objectContaining({ code: 'SPW_ERR_USER_CODE' }));
    const seen: number[] = [];
    const counting = new CustomSelector<string>((_, n) => (seen.push(n), 0));
    counting.setup(7);
    counting.selectChannel('x');
    expect(seen).toEqual([7]);
  });

  test('forward needs exactly one channel', () => {
    const selector: ChannelSelector<string> = new ForwardSelector<string>();
    selector.setup(1);
    expect(selector.selectChannel('anything')).toBe(0);
    expect(() => new ForwardSelector().setup(2)).toThrow('forward needs exactly 1 channel, not 2');
  });

  test('setup rejects a channel count that is not a positive integer', () => {
    const make: (() => ChannelSelector<number>)[] = [
      () => new RebalanceSelector(),
      () => new KeyGroupSelector((k) => k),
      () => new RangeSelector((k) => k, []),
      () => new BroadcastSelector(),
      () => new CustomSelector(() => 0),
      () => new ForwardSelector(),
    ];
    for (const selector of make) {
      for (const n of [0, -1, 1.5, Number.NaN]) expect(() => selector().setup(n), `${selector().constructor.name} ${n}`).toThrow(expect.objectContaining({ code: 'SPW_ERR_INTERNAL' }));
    }
  });

  test('broadcast: every consumer gets every record, in order, also when the writer waits mid-broadcast', async () => {
    const global = new NetworkBufferPool({ totalBytes: 64 * 4 * KiB, segmentSize: 4 * KiB });
    const manager = new ResultPartitionManager();
    const pool = new BufferPool(global, 2, 5, 'broadcast');
    manager.register(new ResultPartition({ id: 'b', type: 'pipelined', numSubpartitions: 4, pool }));
    const selector = new BroadcastSelector<number[]>();
    const writer = new RecordWriter(manager.get('b')!, selector, -1);
    expect(selector.isBroadcast).toBe(true);
    expect(() => selector.selectChannel()).toThrow();
    const records = Array.from({ length: 3000 }, (_, i) => [i, i * 2, i * 3]);
    const reads = [0, 1, 2, 3].map((c) => readByChannel<number[]>(localGate(manager, ['b'], c)));
    await writeAll(writer, records);
    for (const [channel] of await Promise.all(reads)) expect(channel).toEqual(records);
    expectNoLeak(global, [pool]);
  });
});

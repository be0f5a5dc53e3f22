import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { listInputFiles, readChunks, readLines, splitsFor } from '../../src/connectors/text/TextSplits.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-chunks-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** Random lines of bytes: empty ones, long ones, multi-byte characters and invalid UTF-8; sometimes no newline at the end. */
function randomFile(random: () => number): Buffer {
  const pieces = ['a', 'bc ', ' ', 'é', '日本', '🙂', '\r', '\n', '\n\n'].map((p) => Buffer.from(p));
  pieces.push(Buffer.from([0xe6, 0x97]), Buffer.from([0xff]));
  const parts: Buffer[] = [];
  const count = Math.floor(random() * 3000);
  for (let i = 0; i < count; i++) {
    if (random() < 0.002) parts.push(Buffer.alloc(Math.floor(random() * 5000), 'x'));
    parts.push(pieces[Math.floor(random() * pieces.length)]);
  }
  return Buffer.concat(parts);
}

describe('readChunks', () => {
  test.each([1, 2, 3, 4, 5, 6])('seed %i: the chunks of every split, in order, are the files byte for byte; each chunk is whole lines', async (seed) => {
    const random = seededRandom(seed);
    const dir = path.join(work, `seed-${seed}`);
    fs.mkdirSync(dir);
    const contents = [0, 1, 2].map(() => randomFile(random));
    contents.forEach((bytes, i) => fs.writeFileSync(path.join(dir, `f${i}.txt`), bytes));
    const files = listInputFiles(dir);
    for (const [chunkBytes, readSize] of [[1, 16], [100, 64], [4096, 1000], [1 << 16, 1 << 20]]) {
      for (let parallelism = 1; parallelism <= 7; parallelism += 2) {
        const chunks: Buffer[] = [];
        for (let subtask = 0; subtask < parallelism; subtask++) {
          for (const split of splitsFor(files, subtask, parallelism)) {
            await readChunks(split, (chunk) => void chunks.push(chunk), { chunkBytes, readSize });
          }
        }
        const label = `parallelism ${parallelism}, chunks of ${chunkBytes}, reads of ${readSize}`;
        // Checked after every read: a chunk kept by its consumer is never overwritten.
        expect(Buffer.concat(chunks).equals(Buffer.concat(contents)), label).toBe(true);
        const bad = chunks.filter((c, i) => c.length === 0 || (c[c.length - 1] !== 0x0a && !isFileEnd(chunks, i, contents)));
        expect(bad.length, `${label}: chunks that are not whole lines`).toBe(0);
      }
    }
  });

  test('the lines of the chunks are the lines readLines gives, split by split', async () => {
    const random = seededRandom(9);
    const file = path.join(work, 'lines.txt');
    fs.writeFileSync(file, randomFile(random));
    for (let parallelism = 1; parallelism <= 4; parallelism++) {
      for (let subtask = 0; subtask < parallelism; subtask++) {
        for (const split of splitsFor([file], subtask, parallelism)) {
          const lines: string[] = [];
          await readLines(split, (line) => void lines.push(line), 100);
          const chunks: Buffer[] = [];
          await readChunks(split, (chunk) => void chunks.push(chunk), { chunkBytes: 50, readSize: 100 });
          const text = Buffer.concat(chunks).toString('utf8');
          const fromChunks = text === '' ? [] : text.replace(/\n$/, '').split('\n');
          expect(fromChunks).toEqual(lines);
        }
      }
    }
  });

  test('reuse: the same bytes, each chunk read before the next comes, all in one buffer that is overwritten', async () => {
    const random = seededRandom(11);
    const file = path.join(work, 'reuse.txt');
    const bytes = randomFile(random);
    fs.writeFileSync(file, bytes);
    const copies: Buffer[] = [];
    const memory = new Set<ArrayBufferLike>();
    const kept: Buffer[] = [];
    const options = { chunkBytes: 100, readSize: 1000, reuse: true };
    await readChunks({ file, start: 0, end: bytes.length }, (chunk) => {
      copies.push(Buffer.from(chunk));
      kept.push(chunk);
      memory.add(chunk.buffer);
    }, options);
    expect(Buffer.concat(copies).equals(bytes)).toBe(true);
    expect(copies.length).toBeGreaterThan(10);
    // Few buffers for many reads (one grows only for a line longer than a read), and what was kept is overwritten.
    expect(memory.size).toBeLessThan(5);
    expect(Buffer.concat(kept).equals(bytes)).toBe(false);
  });

  test('chunks are about the asked size: at least it, unless the run of lines ends first', async () => {
    const file = path.join(work, 'sizes.txt');
    fs.writeFileSync(file, Array.from({ length: 10_000 }, (_, i) => `line ${i}`).join('\n') + '\n');
    const chunks: Buffer[] = [];
    await readChunks({ file, start: 0, end: fs.statSync(file).size }, (chunk) => void chunks.push(chunk), { chunkBytes: 1000 });
    expect(chunks.slice(0, -1).every((c) => c.length >= 1000 && c.length < 1020)).toBe(true);
  });
});

/** True if chunk i ends where a file ends (its last line may lack a newline). */
function isFileEnd(chunks: Buffer[], i: number, contents: Buffer[]): boolean {
  let offset = 0;
  for (let k = 0; k <= i; k++) offset += chunks[k].length;
  let fileEnd = 0;
  for (const bytes of contents) {
    fileEnd += bytes.length;
    if (fileEnd === offset) return true;
  }
  return false;
}

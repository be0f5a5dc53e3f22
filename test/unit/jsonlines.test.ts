import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { byJson, readAll, writeAll } from '../helpers/connectors.js';
import { tempDir } from '../helpers/plane.js';
import { Soup, type Random } from '../helpers/records.js';

const work = tempDir('jsonlines');
afterAll(() => work.remove());

const soup = new Soup(200_000, 16);

/** JSON-safe records: Unicode (newlines, quotes, surrogate pairs), empty strings, nulls, nesting, and a value of 100 KB every 700. */
function jsonRecords(random: Random, count: number): unknown[] {
  return Array.from({ length: count }, (_, i) => {
    const r = random();
    if (r < 0.05) return null;
    if (r < 0.1) return soup.string(random, Math.floor(random() * 30));
    if (i % 700 === 11) return { id: i, big: soup.string(random, 100_000) };
    return {
      id: i,
      name: random() < 0.1 ? '' : soup.string(random, Math.floor(random() * 40)),
      price: random() < 0.1 ? null : Math.round(random() * 1e6) / 100,
      ok: random() < 0.5,
      tags: [soup.string(random, 5), ''],
      nested: { depth: { more: [1, null, 'x'] } },
    };
  });
}

describe('JSON Lines', () => {
  test.each([undefined, 'gzip', 'zstd'] as const)('records written then read back are the same, compression %s, across 3 tasks', async (compression) => {
    const records = jsonRecords(seededRandom(7), 3000);
    const folder = path.join(work.dir, `round-${compression ?? 'plain'}`);
    await writeAll({ kind: 'jsonLines', path: folder, compression }, [records.slice(0, 1000), records.slice(1000, 1200), records.slice(1200)]);
    const ext = compression === 'gzip' ? '.gz' : compression === 'zstd' ? '.zst' : '';
    expect(fs.readdirSync(folder).sort()).toEqual([0, 1, 2].map((i) => `part-0000${i}${ext}`));
    const read = await readAll({ kind: 'jsonLines', path: folder }, 3);
    expect(byJson(read.records)).toEqual(byJson(records));
    if (compression === undefined) expect(read.perTask.filter((r) => r.length > 0).length, 'the plain files are split among the tasks').toBeGreaterThan(1);
  });

  test('a malformed line fails with SPW_ERR_MALFORMED_INPUT naming the file and its line, counted from the file start in a later split', async () => {
    const file = path.join(work.dir, 'bad.jsonl');
    const lines = Array.from({ length: 40_000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(20) }));
    lines[31_233] = '{"i": 31233, "broken": ';
    fs.writeFileSync(file, lines.join('\n') + '\n');
    // 1.4 MB: at parallelism 2 the bad line is in a split that starts well after the file's start.
    const failure = await readAll({ kind: 'jsonLines', path: file }, 2).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT', line: 31_234 });
    expect((failure as Error).message).toContain(`${file}:31234:`);
  });

  test("with onError 'skip' a malformed line is skipped and counted, and empty lines are skipped uncounted", async () => {
    const file = path.join(work.dir, 'skip.jsonl');
    fs.writeFileSync(file, '{"a":1}\n\nnot json\n{"a":2}\r\n[1,\n{"a":3}');
    const read = await readAll({ kind: 'jsonLines', path: file, onError: 'skip' }, 1);
    expect(read.records).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }]);
    expect(read.malformed).toBe(2);
  });

  test('a corrupt gzip member fails with SPW_ERR_MALFORMED_INPUT naming the file and the byte offset', async () => {
    const file = path.join(work.dir, 'corrupt.jsonl.gz');
    const plain = Buffer.from(jsonRecords(seededRandom(3), 2000).map((r) => JSON.stringify(r)).join('\n'));
    const gz = Buffer.concat([zlib.gzipSync(plain.subarray(0, 100_000)), zlib.gzipSync(plain.subarray(100_000))]);
    const at = gz.length - 20_000;
    for (let i = at; i < at + 64; i++) gz[i] ^= 0x5a;
    fs.writeFileSync(file, gz);
    const failure = await readAll({ kind: 'jsonLines', path: file }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT' });
    const offset = (failure as { position: { byteOffset: number } }).position.byteOffset;
    expect(offset).toBeGreaterThanOrEqual(0);
    expect(offset).toBeLessThanOrEqual(gz.length);
    expect((failure as Error).message).toMatch(new RegExp(`^${file.replace(/[.]/g, '\\.')}: at byte \\d+: corrupt gzip data`));
  });

  test('a truncated zstd file fails with SPW_ERR_MALFORMED_INPUT naming the file', async () => {
    const folder = path.join(work.dir, 'zstd-cut');
    await writeAll({ kind: 'jsonLines', path: folder, compression: 'zstd' }, [jsonRecords(seededRandom(5), 2000)]);
    const file = path.join(folder, 'part-00000.zst');
    fs.truncateSync(file, fs.statSync(file).size - 100);
    const failure = await readAll({ kind: 'jsonLines', path: folder }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT' });
    expect((failure as Error).message).toContain(`${file}: at byte`);
  });
});

describe('compressed text', () => {
  test.each(['gzip', 'zstd'] as const)('writeText with %s writes part-NNNNN with its extension, and readText reads the lines back', async (compression) => {
    const folder = path.join(work.dir, `text-${compression}`);
    const random = seededRandom(11);
    const lines = Array.from({ length: 20_000 }, () => soup.string(random, Math.floor(random() * 80)).replace(/[\r\n]/g, ' '));
    await writeAll({ kind: 'text', text: folder, compression }, [lines.slice(0, 5000), lines.slice(5000)]);
    const ext = compression === 'gzip' ? '.gz' : '.zst';
    expect(fs.readdirSync(folder).sort()).toEqual([`part-00000${ext}`, `part-00001${ext}`]);
    // Text sinks write JSON for anything but a pair: each line is a JSON string.
    const read = await readAll({ kind: 'text', text: folder }, 2);
    expect(read.records.map((line) => JSON.parse(line as string) as string).sort()).toEqual([...lines].sort());
    const chunks = await readAll({ kind: 'text', text: folder, chunks: true }, 2);
    expect(Buffer.concat(chunks.records as Buffer[]).toString().split('\n').filter((l) => l !== '').length).toBe(lines.length);
  });

  test('gzip and zstd files made by the command-line tools read as their plain text', async () => {
    const folder = path.join(work.dir, 'by-tools');
    fs.mkdirSync(folder);
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i} é中😀`).join('\n') + '\n';
    fs.writeFileSync(path.join(folder, 'a.txt.gz'), zlib.gzipSync(text));
    fs.writeFileSync(path.join(folder, 'b.txt'), text);
    const read = await readAll({ kind: 'text', text: folder }, 2);
    expect((read.records as string[]).sort()).toEqual([...text.split('\n').slice(0, -1), ...text.split('\n').slice(0, -1)].sort());
  });
});

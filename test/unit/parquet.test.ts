import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ParquetFile } from '../../src/connectors/parquet/ParquetFiles.js';
import type { ParquetSchema } from '../../src/connectors/parquet/ParquetSchema.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { byJson, readAll, writeAll } from '../helpers/connectors.js';
import { tempDir } from '../helpers/plane.js';
import { Soup } from '../helpers/records.js';

const work = tempDir('parquet');
afterAll(() => work.remove());

const SCHEMA: ParquetSchema = { id: 'INT64', name: 'UTF8', price: 'DOUBLE', n: 'INT32', ok: 'BOOLEAN', at: 'TIMESTAMP', meta: 'JSON' };

function records(count: number, seed: number): Record<string, unknown>[] {
  const soup = new Soup(200_000, 16);
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => ({
    id: BigInt(i) * 1_000_000_007n,
    name: i % 40 === 0 ? '' : i % 31 === 0 ? null : i % 1500 === 7 ? soup.string(random, 150_000) : soup.string(random, Math.floor(random() * 50)),
    price: random() < 0.1 ? null : random() * 1e6,
    n: Math.floor(random() * 2 ** 31) - 2 ** 30,
    ok: random() < 0.1 ? null : random() < 0.5,
    at: new Date(1_700_000_000_000 + i * 1000),
    meta: i % 7 === 0 ? null : { tags: ['a', 'é'], depth: { x: i } },
  }));
}

describe('Parquet', () => {
  const folder = path.join(work.dir, 'round');
  const written = records(4000, 3);

  test.each(['snappy', 'zstd', 'gzip', 'none'] as const)('rows written then read back are the same, %s pages, row groups split among 3 tasks', async (compression) => {
    const out = path.join(folder, compression);
    await writeAll({ kind: 'parquet', path: out, schema: SCHEMA, compression, rowGroupRows: 500 }, [written.slice(0, 2500), written.slice(2500)]);
    expect(fs.readdirSync(out).sort()).toEqual(['part-00000.parquet', 'part-00001.parquet']);
    const read = await readAll({ kind: 'parquet', path: out }, 3);
    expect(read.perTask.every((rows) => rows.length > 0), 'every task got row groups').toBe(true);
    expect(byJson(read.records)).toEqual(byJson(written));
  });

  test('only the projected columns are read', async () => {
    const read = await readAll({ kind: 'parquet', path: path.join(folder, 'snappy'), columns: ['name', 'id'] }, 2);
    expect(byJson(read.records)).toEqual(byJson(written.map(({ id, name }) => ({ id, name }))));
    const failure = await readAll({ kind: 'parquet', path: path.join(folder, 'snappy'), columns: ['nope'] }, 2).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_INVALID_JOB' });
  });

  test('a truncated file fails with SPW_ERR_MALFORMED_INPUT naming the file and the byte offset', async () => {
    const out = path.join(work.dir, 'truncated');
    await writeAll({ kind: 'parquet', path: out, schema: SCHEMA }, [written.slice(0, 1000)]);
    const file = path.join(out, 'part-00000.parquet');
    const size = fs.statSync(file).size;
    fs.truncateSync(file, size - 1000);
    const failure = await readAll({ kind: 'parquet', path: out }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT', position: { byteOffset: size - 1000 } });
    expect((failure as Error).message).toContain(`${file}: at byte ${size - 1000}: truncated`);
  });

  test('a damaged row group fails with SPW_ERR_MALFORMED_INPUT naming the file and the row group', async () => {
    const out = path.join(work.dir, 'damaged');
    await writeAll({ kind: 'parquet', path: out, schema: SCHEMA, rowGroupRows: 250 }, [written.slice(0, 1000)]);
    const file = path.join(out, 'part-00000.parquet');
    const parquet = ParquetFile.open(file);
    const group = parquet.metadata().row_groups[2];
    parquet.close();
    const start = Number(group.columns[1].meta_data!.data_page_offset);
    const bytes = fs.readFileSync(file);
    bytes.fill(0xff, start, start + 64);
    fs.writeFileSync(file, bytes);
    const failure = await readAll({ kind: 'parquet', path: out }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT', position: { rowGroup: 2 } });
    expect((failure as Error).message).toContain(`${file}: row group 2: `);
  });

  test('a sink refuses a schema with an unknown type', async () => {
    await expect(writeAll({ kind: 'parquet', path: work.dir, schema: { a: 'DECIMAL' as 'INT32' } }, [])).rejects.toMatchObject({ code: 'SPW_ERR_INVALID_JOB' });
  });
});

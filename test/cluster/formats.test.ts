import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, describe, expect } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { expectFinished, result, submitJob, uploadModule, waitFor } from '../helpers/jobs.js';
import { tempDir } from '../helpers/plane.js';

const work = tempDir('formats');
afterAll(() => work.remove());

const test = clusterTest({ taskManagers: 2, slots: 2, memory: '64mb' }, { leakCheck: true });

const CATEGORIES = ['books', 'music', 'games', 'garden', 'tools'];

/** Orders as JSON Lines (three files, one gzip, two malformed lines) and their prices as CSV with multi-line quoted notes. */
function writeInputs(orders: string, prices: string, count: number): Map<number, { category: string; price: number; note: string }> {
  const random = seededRandom(17);
  const expected = new Map<number, { category: string; price: number; note: string }>();
  const lines: string[] = [];
  const rows = ['id,price,note'];
  for (let id = 0; id < count; id++) {
    const category = CATEGORIES[Math.floor(random() * CATEGORIES.length)];
    const price = Math.round(random() * 100_000) / 100;
    const note = id % 3 === 0 ? `a "note", on\ntwo lines é${id}` : `plain ${id}`;
    expected.set(id, { category, price, note });
    lines.push(JSON.stringify({ id, category, pad: 'x'.repeat(Math.floor(random() * 40)) }));
    rows.push(`${id},${price},"${note.replace(/"/g, '""')}"`);
  }
  lines.splice(1234, 0, '{"id": broken');
  lines.splice(15_000, 0, 'not json at all');
  fs.mkdirSync(orders);
  const third = Math.ceil(lines.length / 3);
  fs.writeFileSync(path.join(orders, 'a.jsonl'), lines.slice(0, third).join('\n') + '\n');
  fs.writeFileSync(path.join(orders, 'b.jsonl.gz'), zlib.gzipSync(lines.slice(third, 2 * third).join('\n') + '\n'));
  fs.writeFileSync(path.join(orders, 'c.jsonl'), lines.slice(2 * third).join('\n'));
  fs.writeFileSync(prices, rows.join('\n') + '\n');
  return expected;
}

// Orders (JSON Lines) joined with their prices (CSV) by id: both sources split across 4 tasks on 2 TaskManagers.
const JOIN_JOB = `export default (params) => ({
  name: 'orders-with-prices',
  stages: [
    { name: 'orders', source: { kind: 'jsonLines', path: params.orders, onError: 'skip' } },
    { name: 'prices', source: { kind: 'csv', path: params.prices, header: true, columns: { id: 'number', price: 'number', note: 'string' } } },
    {
      name: 'join',
      inputs: [
        { from: 'orders', partitioning: { type: 'hash', key: (r) => r.id } },
        { from: 'prices', partitioning: { type: 'hash', key: (r) => r.id } },
      ],
      operators: [{ kind: 'join', join: { keys: [(r) => r.id, (r) => r.id], combine: (o, p) => ({ id: o.id, category: o.category, price: p.price, note: p.note }) } }],
      sink: { kind: 'collect' },
    },
  ],
});`;

const PARQUET_WRITE_JOB = `export default (params) => ({
  name: 'parquet-write',
  stages: [{
    name: 'generate',
    source: { kind: 'generate', generate: function* (subtask, parallelism) {
      for (let i = subtask; i < Number(params.rows); i += parallelism) yield { id: i, name: i % 10 === 0 ? null : 'name ' + i + ' é', price: i / 4, big: BigInt(i) * 1000000007n };
    } },
    sink: { kind: 'parquet', path: params.output, schema: { id: 'INT32', name: 'UTF8', price: 'DOUBLE', big: 'INT64' }, rowGroupRows: 2000 },
  }],
});`;

const PARQUET_READ_JOB = `export default (params) => ({
  name: 'parquet-read',
  stages: [
    { name: 'read', source: { kind: 'parquet', path: params.input }, operators: [{ kind: 'map', map: (r) => ({ ...r, big: String(r.big) }) }] },
    { name: 'collect', inputs: [{ from: 'read', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } },
  ],
});`;

const MALFORMED_JOB = `export default (params) => ({
  name: 'malformed',
  stages: [{ name: 'read', source: JSON.parse(params.source), sink: { kind: 'discard' } }],
});`;

interface Counted {
  counters: { malformedRecords?: number };
  tasks: { stage: string; taskManager: string; counters: { recordsOut: number } }[];
}

describe('file formats on a cluster', () => {
  test('a job joins JSON Lines and CSV read across 2 TaskManagers at parallelism 4, exactly, counting the skipped lines', async ({ cluster }) => {
    const orders = path.join(work.dir, 'orders');
    const prices = path.join(work.dir, 'prices.csv');
    const expected = writeInputs(orders, prices, 20_000);
    const id = await submitJob(cluster.url, { module: await uploadModule(cluster.url, JOIN_JOB), params: { orders, prices }, parallelism: 4 });
    await expectFinished(cluster.url, id);
    const joined = await result<{ id: number; category: string; price: number; note: string }>(cluster.url, id);
    expect(joined.sort((a, b) => a.id - b.id)).toEqual([...expected].map(([id, order]) => ({ id, ...order })));
    const status = await callJson<Counted>('GET', `${cluster.url}/jobs/${id}`);
    expect(status.counters.malformedRecords).toBe(2);
    for (const stage of ['orders', 'prices']) {
      const tasks = status.tasks.filter((t) => t.stage === stage);
      expect(new Set(tasks.map((t) => t.taskManager)).size, `${stage} runs on both TaskManagers`).toBe(2);
      expect(tasks.filter((t) => t.counters.recordsOut > 0).length, `${stage}'s splits went to more than one task`).toBeGreaterThan(1);
    }
  });

  test('a job writes Parquet across 4 tasks and another reads it back, its row groups split among 4 tasks', async ({ cluster }) => {
    const output = path.join(work.dir, 'parquet');
    const rows = 20_000;
    const write = await submitJob(cluster.url, { module: await uploadModule(cluster.url, PARQUET_WRITE_JOB), params: { rows: String(rows), output }, parallelism: 4 });
    await expectFinished(cluster.url, write);
    expect(fs.readdirSync(output).sort()).toEqual(['part-00000.parquet', 'part-00001.parquet', 'part-00002.parquet', 'part-00003.parquet']);
    const read = await submitJob(cluster.url, { module: await uploadModule(cluster.url, PARQUET_READ_JOB), params: { input: output }, parallelism: 4 });
    await expectFinished(cluster.url, read);
    const back = await result<{ id: number; name: string | null; price: number; big: string }>(cluster.url, read);
    expect(back.sort((a, b) => a.id - b.id)).toEqual(
      Array.from({ length: rows }, (_, i) => ({ id: i, name: i % 10 === 0 ? null : `name ${i} é`, price: i / 4, big: String(BigInt(i) * 1000000007n) })),
    );
    const status = await callJson<Counted>('GET', `${cluster.url}/jobs/${read}`);
    expect(status.tasks.filter((t) => t.stage === 'read' && t.counters.recordsOut > 0).length).toBeGreaterThan(1);
  });

  test('malformed input fails the job with SPW_ERR_MALFORMED_INPUT naming the file and where: a JSON line in a task, a truncated Parquet file at the first ask for splits', async ({ cluster }) => {
    const bad = path.join(work.dir, 'bad.jsonl');
    fs.writeFileSync(bad, Array.from({ length: 5000 }, (_, i) => (i === 4321 ? '{"id": ' : JSON.stringify({ id: i }))).join('\n'));
    const cut = path.join(work.dir, 'cut.parquet');
    fs.writeFileSync(cut, fs.readFileSync(path.join(work.dir, 'parquet', 'part-00000.parquet')).subarray(0, 5000));
    const module = await uploadModule(cluster.url, MALFORMED_JOB);
    for (const [source, where] of [[{ kind: 'jsonLines', path: bad }, `${bad}:4322:`], [{ kind: 'parquet', path: cut }, `${cut}: at byte 5000: truncated`]] as const) {
      const id = await submitJob(cluster.url, { module, params: { source: JSON.stringify(source) }, parallelism: 2, restart: { strategy: 'none' } });
      const status = await waitFor(cluster.url, id);
      expect([status.state, status.errorCode]).toEqual(['FAILED', 'SPW_ERR_MALFORMED_INPUT']);
      expect(status.error).toContain(where);
    }
  });
});

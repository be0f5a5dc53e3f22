import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Catalog } from '../../src/sql/Catalog.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { SqlSession } from '../../src/sql/SqlSession.js';
import { runLocalJob } from '../helpers/localJob.js';
import { finalTable } from '../helpers/nexmarkSqlReference.js';

interface Event {
  k: string;
  v: number;
  ts: number;
}

const BASE = Date.UTC(2026, 11, 7, 10, 0, 0);
const events: Event[] = [];
let dir: string;
let session: SqlSession;

const ts = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/** Events over 200 s, each moved up to 4 s out of its order: never later than the table's 5 s watermark delay. */
beforeAll(() => {
  let seed = 11;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return (seed >>> 12) % n;
  };
  let t = BASE;
  for (let i = 0; i < 2000; i++) {
    t += next(200);
    events.push({ k: ['a', 'b', 'c', 'd'][next(4)]!, v: next(100), ts: t });
  }
  const shuffled = events.map((e) => ({ e, at: e.ts + next(4000) })).sort((x, y) => x.at - y.at);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-windows-'));
  fs.writeFileSync(path.join(dir, 'events.jsonl'), shuffled.map(({ e }) => JSON.stringify(e)).join('\n') + '\n');
  session = new SqlSession(new Catalog());
  session.execute(`CREATE TABLE events (k STRING, v INT, ts BIGINT, t AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR t AS t - INTERVAL '5' SECOND)
    WITH ('connector' = 'filesystem', 'path' = '${dir}/events.jsonl', 'format' = 'json');`);
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function rows(query: string): Promise<string[]> {
  const [result] = session.execute(query);
  if (result?.kind !== 'job') throw new Error('no job');
  const { collected } = await runLocalJob(sqlJob(result.submission.params as unknown as Record<string, unknown>), { parallelism: 2 });
  return finalTable([...collected.values()].flatMap((parts) => [...parts.values()].flat()));
}

/** The reference: each window's rows by key, its count and sum. */
function reference(windows: (t: number) => [number, number][], byKey = true): string[] {
  const groups = new Map<string, { n: number; s: number }>();
  for (const e of events) {
    for (const [start, end] of windows(e.ts)) {
      const key = JSON.stringify([byKey ? e.k : '', start, end]);
      const g = groups.get(key) ?? { n: 0, s: 0 };
      g.n++;
      g.s += e.v;
      groups.set(key, g);
    }
  }
  return [...groups].map(([key, g]) => {
    const [k, start, end] = JSON.parse(key) as [string, number, number];
    return JSON.stringify(byKey ? { k, window_start: ts(start), window_end: ts(end), n: g.n, s: g.s } : { window_start: ts(start), window_end: ts(end), n: g.n, s: g.s });
  }).sort();
}

const tumble = (size: number) => (t: number): [number, number][] => [[t - (t % size), t - (t % size) + size]];
const hop = (slide: number, size: number) => (t: number): [number, number][] => {
  const out: [number, number][] = [];
  for (let start = t - (t % slide); start > t - size; start -= slide) out.push([start, start + size]);
  return out;
};

const cumulate = (step: number, size: number) => (t: number): [number, number][] => {
  const start = t - (t % size);
  const out: [number, number][] = [];
  for (let end = start + step; end <= start + size; end += step) if (t < end) out.push([start, end]);
  return out;
};

describe('window TVFs over out-of-order events equal a reference', () => {
  test('TUMBLE by key', async () => {
    expect(await rows("SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(t), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end;")).toEqual(reference(tumble(10_000)));
  });

  test('HOP over all keys', async () => {
    expect(await rows("SELECT window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(HOP(TABLE events, DESCRIPTOR(t), INTERVAL '5' SECOND, INTERVAL '15' SECOND)) GROUP BY window_start, window_end;")).toEqual(reference(hop(5_000, 15_000), false));
  });

  test('SESSION with PARTITION BY', async () => {
    const expected: string[] = [];
    for (const k of ['a', 'b', 'c', 'd']) {
      const mine = events.filter((e) => e.k === k).sort((x, y) => x.ts - y.ts);
      let start = mine[0]!.ts;
      let last = start;
      let n = 0;
      let s = 0;
      const close = (): void => void expected.push(JSON.stringify({ k, window_start: ts(start), window_end: ts(last + 3000), n, s }));
      for (const e of mine) {
        if (e.ts > last + 3000) {
          close();
          start = e.ts;
          n = 0;
          s = 0;
        }
        last = e.ts;
        n++;
        s += e.v;
      }
      close();
    }
    expect(await rows("SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(SESSION(TABLE events PARTITION BY k, DESCRIPTOR(t), INTERVAL '3' SECOND)) GROUP BY k, window_start, window_end;")).toEqual(expected.sort());
  });

  test('CUMULATE under GROUP BY, by key: each step of each window, its rows so far', async () => {
    expect(await rows("SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(CUMULATE(TABLE events, DESCRIPTOR(t), INTERVAL '5' SECOND, INTERVAL '20' SECOND)) GROUP BY k, window_start, window_end;")).toEqual(reference(cumulate(5_000, 20_000)));
  });

  test('CUMULATE under GROUP BY over all keys, with HAVING', async () => {
    const expected = reference(cumulate(2_000, 10_000), false).filter((r) => (JSON.parse(r) as { n: number }).n > 20);
    expect(expected.length).toBeGreaterThan(0);
    expect(await rows("SELECT window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(CUMULATE(TABLE events, DESCRIPTOR(t), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY window_start, window_end HAVING COUNT(*) > 20;")).toEqual(expected);
  });

  test('window Top-N over a TUMBLE TVF: each window\'s three highest rows, ranked, given once as the window ends', async () => {
    const [result] = session.execute('SELECT window_start, window_end, k, v, ts, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY v DESC, ts DESC, k) AS rn FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(t), INTERVAL \'10\' SECOND))) WHERE rn <= 3;');
    expect(result?.kind === 'job' && result.updating).toBe(false);
    const byWindow = new Map<number, Event[]>();
    for (const e of events) byWindow.set(e.ts - (e.ts % 10_000), [...(byWindow.get(e.ts - (e.ts % 10_000)) ?? []), e]);
    const expected = [...byWindow].flatMap(([start, list]) =>
      list
        .sort((a, b) => b.v - a.v || b.ts - a.ts || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
        .slice(0, 3)
        .map((e, i) => JSON.stringify({ window_start: ts(start), window_end: ts(start + 10_000), k: e.k, v: e.v, ts: e.ts, rn: i + 1 })),
    );
    expect(await rows('SELECT window_start, window_end, k, v, ts, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY v DESC, ts DESC, k) AS rn FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(t), INTERVAL \'10\' SECOND))) WHERE rn <= 3;')).toEqual(expected.sort());
  });

  test('window Top-N over a window aggregate: the two keys of highest sum in each HOP window', async () => {
    const sums = reference(hop(5_000, 15_000)).map((r) => JSON.parse(r) as { k: string; window_start: string; window_end: string; s: number });
    const windows = new Map<string, typeof sums>();
    for (const r of sums) windows.set(r.window_start, [...(windows.get(r.window_start) ?? []), r]);
    const expected = [...windows.values()].flatMap((list) =>
      list.sort((a, b) => b.s - a.s || (a.k < b.k ? -1 : 1)).slice(0, 2).map((r) => JSON.stringify({ window_start: r.window_start, window_end: r.window_end, k: r.k, s: r.s })),
    );
    const query = `SELECT window_start, window_end, k, s FROM (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY s DESC, k) AS rn
      FROM (SELECT window_start, window_end, k, SUM(v) AS s FROM TABLE(HOP(TABLE events, DESCRIPTOR(t), INTERVAL '5' SECOND, INTERVAL '15' SECOND)) GROUP BY window_start, window_end, k)
    ) WHERE rn <= 2;`;
    const [result] = session.execute(query);
    expect(result?.kind === 'job' && result.updating).toBe(false);
    expect(await rows(query)).toEqual(expected.sort());
  });

  test('CUMULATE as a table function: each row once per window of its step', async () => {
    const got = await rows("SELECT k, v, window_start, window_end FROM TABLE(CUMULATE(TABLE events, DESCRIPTOR(t), INTERVAL '5' SECOND, INTERVAL '20' SECOND));");
    const expected = events.flatMap((e) => {
      const start = e.ts - (e.ts % 20_000);
      const out: string[] = [];
      for (let end = start + 5000; end <= start + 20_000; end += 5000) if (e.ts < end) out.push(JSON.stringify({ k: e.k, v: e.v, window_start: ts(start), window_end: ts(end) }));
      return out;
    });
    expect(got).toEqual(expected.sort());
  });
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Catalog } from '../../src/sql/Catalog.js';
import type { SqlError } from '../../src/sql/SqlError.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { SqlSession } from '../../src/sql/SqlSession.js';
import { toInstant, toLocal, zoneOffset } from '../../src/sql/TimeZone.js';
import { runLocalJob } from '../helpers/localJob.js';
import { finalTable } from '../helpers/nexmarkSqlReference.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SHANGHAI = 8 * HOUR;
const BASE = Date.UTC(2026, 11, 5, 0, 0, 0);
const events: { k: string; ts: number }[] = [];
let dir: string;

const ts = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/** Events over three days, every 37 minutes and some seconds, in order. */
beforeAll(() => {
  for (let i = 0; i < 120; i++) events.push({ k: ['a', 'b'][i % 2]!, ts: BASE + i * 37 * 60_000 + (i % 7) * 1000 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-tz-'));
  fs.writeFileSync(path.join(dir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function session(zone?: string): SqlSession {
  const s = new SqlSession(new Catalog());
  s.execute(`CREATE TABLE events (k STRING, ts BIGINT, t AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR t AS t - INTERVAL '1' SECOND)
    WITH ('connector' = 'filesystem', 'path' = '${dir}/events.jsonl', 'format' = 'json');`);
  if (zone !== undefined) s.execute(`SET 'table.local-time-zone' = '${zone}';`);
  return s;
}

async function rows(s: SqlSession, query: string): Promise<string[]> {
  const [result] = s.execute(query);
  if (result?.kind !== 'job') throw new Error('no job');
  const { collected } = await runLocalJob(sqlJob(result.submission.params as unknown as Record<string, unknown>), { parallelism: 2 });
  return finalTable([...collected.values()].flatMap((parts) => [...parts.values()].flat()));
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as SqlError).code;
  }
}

describe("SET 'table.local-time-zone' is honoured where Flink honours it", () => {
  test('a zone is a region, UTC or an offset; its offset follows summer time', () => {
    const july = Date.UTC(2026, 6, 1, 12);
    expect(zoneOffset('Asia/Shanghai', july)).toBe(SHANGHAI);
    expect(zoneOffset('GMT+08:00', july)).toBe(SHANGHAI);
    expect(zoneOffset('-05:30', july)).toBe(-5.5 * HOUR);
    expect(zoneOffset('Europe/Berlin', july)).toBe(2 * HOUR);
    expect(zoneOffset('Europe/Berlin', Date.UTC(2026, 0, 1))).toBe(HOUR);
    expect(toInstant(toLocal(july, 'Europe/Berlin'), 'Europe/Berlin')).toBe(july);
    expect(codeOf(() => session('Nowhere/Atlantis'))).toBe('SPW_ERR_SQL_TYPE');
  });

  test('a TIMESTAMP_LTZ is shown, cast, formatted and extracted in the zone; a TIMESTAMP is not moved', async () => {
    const got = await rows(session('Asia/Shanghai'), "SELECT t, CAST(t AS TIMESTAMP(3)) AS wall, CAST(t AS STRING) AS s, HOUR(t) AS h, DATE_FORMAT(t, 'yyyy-MM-dd HH:mm') AS f, TO_TIMESTAMP(DATE_FORMAT(t, 'yyyy-MM-dd HH:mm:ss')) AS back FROM events;");
    const expected = events.map((e) => {
      const local = e.ts + SHANGHAI;
      return JSON.stringify({ t: ts(local), wall: ts(local), s: ts(local), h: new Date(local).getUTCHours(), f: ts(local).slice(0, 16), back: ts(local - (local % 1000)) });
    });
    expect(got).toEqual(expected.sort());
  });

  test('without the setting every time is in UTC', async () => {
    const got = await rows(session(), 'SELECT t, HOUR(t) AS h FROM events;');
    expect(got).toEqual(events.map((e) => JSON.stringify({ t: ts(e.ts), h: new Date(e.ts).getUTCHours() })).sort());
  });

  test("a TUMBLE of a day over a TIMESTAMP_LTZ follows the zone's midnight", async () => {
    const reference = (offset: number): string[] => {
      const groups = new Map<string, number>();
      for (const e of events) {
        const start = e.ts + offset - ((e.ts + offset) % DAY);
        const key = JSON.stringify([e.k, start]);
        groups.set(key, (groups.get(key) ?? 0) + 1);
      }
      return [...groups].map(([key, n]) => {
        const [k, start] = JSON.parse(key) as [string, number];
        return JSON.stringify({ k, window_start: ts(start), window_end: ts(start + DAY), n });
      }).sort();
    };
    const query = "SELECT k, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(t), INTERVAL '1' DAY)) GROUP BY k, window_start, window_end;";
    const shanghai = await rows(session('Asia/Shanghai'), query);
    expect(shanghai).toEqual(reference(SHANGHAI));
    expect(shanghai).not.toEqual(reference(0));
    expect(await rows(session(), query)).toEqual(reference(0));
  });

  test('a TVF without GROUP BY gives wall-clock bounds in the zone', async () => {
    const got = await rows(session('GMT+08:00'), "SELECT k, window_start, window_end, window_time FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(t), INTERVAL '6' HOUR));");
    const expected = events.map((e) => {
      const local = e.ts + SHANGHAI;
      const start = local - (local % (6 * HOUR));
      return JSON.stringify({ k: e.k, window_start: ts(start), window_end: ts(start + 6 * HOUR), window_time: ts(start + 6 * HOUR - 1) });
    });
    expect(got).toEqual(expected.sort());
  });

  test('CURRENT_TIMESTAMP shows the instant in the zone and LOCALTIMESTAMP is its wall clock there', async () => {
    const before = Date.now();
    const [row] = await rows(session('Asia/Shanghai'), 'SELECT CURRENT_TIMESTAMP AS c, LOCALTIMESTAMP AS l, CAST(CURRENT_TIMESTAMP AS TIMESTAMP(3)) AS w;');
    const after = Date.now();
    const { c, l, w } = JSON.parse(row!) as Record<string, string>;
    for (const shown of [c!, l!, w!]) {
      const instant = Date.parse(`${shown.replace(' ', 'T')}Z`) - SHANGHAI;
      expect(instant).toBeGreaterThanOrEqual(before);
      expect(instant).toBeLessThanOrEqual(after);
    }
  });

  test('windows of a day over a TIMESTAMP_LTZ in a zone with summer time are refused, with the place', () => {
    expect(codeOf(() => session('Europe/Berlin').execute("SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(t), INTERVAL '1' DAY)) GROUP BY window_start, window_end;"))).toBe('SPW_ERR_SQL_UNSUPPORTED');
    expect(codeOf(() => session('Europe/Berlin').execute("SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(t), INTERVAL '1' HOUR)) GROUP BY window_start, window_end;"))).toBeUndefined();
  });
});

import { describe, expect, test } from 'vitest';
import { NexmarkGenerator, type NexmarkEvent } from '../../src/connectors/nexmark/NexmarkGenerator.js';
import { BUILTIN_JOBS } from '../../src/job/BuiltinJobs.js';
import { runLocalJob } from '../helpers/localJob.js';
import * as reference from '../helpers/nexmarkReference.js';

const EVENTS = 6_000;

/** The one stream every split of the job's source takes its share of. */
function allEvents(events: number, seed: number): NexmarkEvent[] {
  const generator = new NexmarkGenerator({ events, seed });
  const out: NexmarkEvent[] = [];
  for (let e = generator.next(); e !== null; e = generator.next()) out.push(e);
  return out;
}

/** A built-in query run in this process over `events` of `seed`, its rows. */
async function runQuery(name: string, parallelism: number, seed: number): Promise<Record<string, unknown>[]> {
  const job = BUILTIN_JOBS[`nexmark-${name}`]({ events: EVENTS, seed });
  const { collected } = await runLocalJob(job, { parallelism, segmentSize: 8192 });
  return [...collected.values()].flat(2) as Record<string, unknown>[];
}

type Query = 'q0' | 'q1' | 'q2' | 'q3' | 'q5' | 'q7' | 'q8' | 'q11';
const QUERIES: Query[] = ['q0', 'q1', 'q2', 'q3', 'q5', 'q7', 'q8', 'q11'];

describe('Nexmark queries equal a single-threaded evaluation of the same events', () => {
  for (const parallelism of [1, 3]) {
    const seed = 40 + parallelism;
    const events = allEvents(EVENTS, seed);

    test.each(QUERIES)(`%s at parallelism ${parallelism}`, async (name) => {
      const rows = await runQuery(name, parallelism, seed);
      const expected = reference[name](events) as Record<string, unknown>[];
      expect(expected.length, 'the reference has rows to compare').toBeGreaterThan(0);
      expect(reference.sortRows(rows as never)).toEqual(expected);
    });

    test(`q4 at parallelism ${parallelism}: the last average given for each category is the reference's`, async () => {
      const rows = (await runQuery('q4', parallelism, seed)) as reference.Q4Row[];
      const last = new Map<number, number>();
      for (const row of rows) last.set(row.category, row.avg);
      const expected = reference.q4(events);
      expect(expected.length).toBeGreaterThan(0);
      expect(reference.sortRows([...last].map(([category, avg]) => ({ category, avg })))).toEqual(expected);
    });
  }
});

import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { SavepointStatus } from '../../src/rest/RestApi.js';
import { RestClient } from '../../src/rest/RestClient.js';
import { eventually } from './eventually.js';

/** A job module's statement (with `fs` and `line` in scope): with params.failOnce (a file path), the first line "boom" fails its task once, and the job restarts. */
export const FAIL_ONCE = `if (line === 'boom' && params.failOnce !== undefined && !fs.existsSync(params.failOnce)) {
        fs.writeFileSync(params.failOnce, '');
        throw new Error('boom');
      }`;

/** A job module's process function (source text): a running count per key, `[key, count]` for each record. */
export const RUNNING_COUNT = `{
      processElement(key, ctx, emit) {
        const count = ctx.state.value('count');
        const n = (count.get() ?? 0) + 1;
        count.set(n);
        emit([key, n]);
      },
    }`;

/**
 * A job module over a monitored folder of `key,seq` lines: a keyed count (state per key)
 * that emits `[key, count]` for each record, collected (written as text into
 * `params.output` if given). `extra` adds operators to the counting stage and `stage`
 * names it: a changed topology for the same savepoint.
 */
export function countingModule({ extra = '', stage = 'count' }: { extra?: string; stage?: string } = {}): string {
  return `import fs from 'node:fs';
import { JobBuilder } from 'spillway';
export default (params) => {
  const job = new JobBuilder('keyed-counts');
  const counted = job
    .readText(params.input, { monitor: 20 })
    .map((line) => {
      ${FAIL_ONCE}
      return line.split(',')[0];
    })
    .keyBy((key) => key)
    .process(${RUNNING_COUNT})${extra}
    .name(${JSON.stringify(stage)});
  if (params.output === undefined) counted.collect();
  else counted.writeText(params.output);
  return job.build();
};
`;
}

/** Deterministic `key,seq` lines over `keys` keys: `count` of them from `first`. */
export function lines(first: number, count: number, keys: number): string[] {
  return Array.from({ length: count }, (_, i) => `k${((first + i) * 7919) % keys},${first + i}`);
}

/** Writes a file into a watched folder as a writer should: under a hidden name, then renamed. */
export function drop(folder: string, name: string, content: readonly string[]): void {
  const hidden = path.join(folder, `.${name}`);
  fs.writeFileSync(hidden, content.join('\n') + '\n');
  fs.renameSync(hidden, path.join(folder, name));
}

/** Per key, how many lines name it. */
export function keyCounts(content: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of content) {
    const key = line.split(',')[0];
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** What a keyed count emits for `added` records after it had counted `before`: every key's counts from before+1 to before+added, once each. */
export function expectedRows(before: ReadonlyMap<string, number>, added: ReadonlyMap<string, number>): [string, number][] {
  const rows: [string, number][] = [];
  for (const [key, n] of added) for (let c = (before.get(key) ?? 0) + 1; c <= (before.get(key) ?? 0) + n; c++) rows.push([key, c]);
  return sortRows(rows);
}

export function sortRows(rows: [string, number][]): [string, number][] {
  return [...rows].sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1));
}

export function add(into: Map<string, number>, more: ReadonlyMap<string, number>): void {
  for (const [key, n] of more) into.set(key, (into.get(key) ?? 0) + n);
}

/** Records the tasks of `stage` have taken in, as their last heartbeats report. */
export async function recordsIn(url: string, id: string, stage: string): Promise<number> {
  const job = await new RestClient(url).job(id);
  return job.tasks.filter((t) => t.stage === stage).reduce((sum, t) => sum + t.counters.recordsIn, 0);
}

export async function waitRecordsIn(url: string, id: string, stage: string, count: number, timeoutMs = 30_000): Promise<void> {
  let seen = 0;
  await eventually(() => `job ${id}: ${count} records into ${stage} (${seen} so far)`, async () => (seen = await recordsIn(url, id, stage)) >= count, { timeoutMs, everyMs: 50 });
  expect(seen, `${stage} took in more records than it was given`).toBe(count);
}

/** Takes a savepoint into `directory` (`stop`: and stops the job) and waits for it; its status. */
export async function savepoint(url: string, id: string, directory: string, stop: boolean): Promise<SavepointStatus> {
  const jm = new RestClient(url);
  const asked = await jm.savepoint(id, directory, stop);
  return eventually(`savepoint ${asked.id} of ${id} no longer in progress`, async () => {
    const status = await jm.savepointStatus(id, asked.id);
    return status.status !== 'IN_PROGRESS' && status;
  });
}

/** A job `name` keeping a running count per `key` field of unbounded Redis streams, each update inserted into PostgreSQL's `updates` as a row (no key: a row written twice would stay). */
export function redisCountsModule(name: string, redis: string, streams: readonly string[], postgres: string): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder(${JSON.stringify(name)});
job
  .readRedisStream({ url: ${JSON.stringify(redis)}, streams: ${JSON.stringify(streams)}, bounded: false, batchSize: 100 })
  .map((entry) => entry.fields.key)
  .keyBy((key) => key)
  .process(${RUNNING_COUNT})
  .map(([key, n]) => ({ key, n }))
  .writePostgres({ url: ${JSON.stringify(postgres)}, table: 'updates', columns: ['key', 'n'] });
export default job.build();
`;
}

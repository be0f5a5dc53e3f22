import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROLL_INTERVAL_MS } from '../../src/connectors/PartFiles.js';
import { sinkSpec } from '../../src/connectors/Sinks.js';
import type { SinkContext, SinkWriter } from '../../src/connectors/SinkSpec.js';
import { seededRandom } from '../../src/job/Corpus.js';
import type { Sink, Source } from '../../src/job/JobDefinition.js';
import { byJson, readAll } from '../helpers/connectors.js';
import { tempDir } from '../helpers/plane.js';

interface Row {
  n: number;
  s: string;
}

const JOB = 'job-0001-sinktest';

/** Each file sink kind, and the source that reads its committed output back. */
const KINDS: { name: string; sink: (dir: string) => Sink; source: (dir: string) => Source }[] = [
  { name: 'JSON Lines', sink: (dir) => ({ kind: 'jsonLines', path: dir }), source: (dir) => ({ kind: 'jsonLines', path: dir }) },
  { name: 'JSON Lines, gzip', sink: (dir) => ({ kind: 'jsonLines', path: dir, compression: 'gzip' }), source: (dir) => ({ kind: 'jsonLines', path: dir }) },
  { name: 'CSV with a header', sink: (dir) => ({ kind: 'csv', path: dir, header: true }), source: (dir) => ({ kind: 'csv', path: dir, header: true, columns: { n: 'number', s: 'string' } }) },
  { name: 'Parquet', sink: (dir) => ({ kind: 'parquet', path: dir, schema: { n: 'INT32', s: 'UTF8' } }), source: (dir) => ({ kind: 'parquet', path: dir }) },
];

function context(subtask: number, attempt: number, options: { checkpointed: boolean; bounded: boolean; pending?: [number, unknown][]; every?: SinkContext['every'] }): SinkContext {
  return { jobId: JOB, subtask, attempt, collected: async () => undefined, every: options.every ?? (() => undefined), checkpointed: options.checkpointed, bounded: options.bounded, pending: options.pending ?? [] };
}

/** What a reader sees in the folder: every committed record, in no particular order. */
async function visible(kind: (typeof KINDS)[number], dir: string): Promise<unknown[]> {
  if (!fs.existsSync(dir) || fs.readdirSync(dir).every((name) => name.startsWith('.'))) return [];
  return byJson((await readAll(kind.source(dir))).records);
}

/**
 * One sink subtask of a job with checkpoints, run as the engine runs it: records from a
 * source position, checkpoints prepared at random and completed later (some never),
 * crashes that restore from the last completed checkpoint (its pending transactions
 * committed first, the source back at its position), then the end of the input and the
 * JobManager's commit. The folder then holds every record exactly once.
 */
async function crashingRun(kind: (typeof KINDS)[number], dir: string, seed: number): Promise<Row[]> {
  const random = seededRandom(seed);
  const records: Row[] = Array.from({ length: 200 }, (_, n) => ({ n, s: `r${n}-${'é'.repeat(n % 4)}` }));
  const spec = sinkSpec(kind.sink(dir));
  let attempt = 0;
  let position = 0;
  let nextId = 1;
  /** Checkpoints prepared and not yet completed: their id, the source position and every pending transaction then (the task's snapshot). */
  let taken: { id: number; position: number; pending: [number, unknown][] }[] = [];
  let completed: { id: number; position: number; pending: [number, unknown][] } | null = null;
  let pending: [number, unknown][] = [];
  let writer: SinkWriter = await spec.open(kind.sink(dir), context(0, attempt, { checkpointed: true, bounded: true }));
  while (position < records.length) {
    const step = random();
    if (step < 0.7) await writer.push(records[position++]);
    else if (step < 0.8) {
      const id = nextId++;
      pending.push([id, await writer.prepareCommit!(id)]);
      taken.push({ id, position, pending: [...pending] });
    } else if (step < 0.9 && taken.length > 0) {
      // The oldest taken checkpoint completes (or a newer one, which subsumes it).
      const done = taken.splice(0, 1 + Math.floor(random() * taken.length)).at(-1)!;
      completed = done;
      for (const [id, transaction] of pending.filter(([id]) => id <= done.id)) await writer.commit!(id, transaction);
      pending = pending.filter(([id]) => id > done.id);
    } else if (step < 0.93) {
      // A crash: the attempt's writer is aborted, a new attempt restores the last completed checkpoint.
      writer.abort();
      attempt++;
      taken = [];
      pending = completed === null ? [] : [...completed.pending];
      position = completed?.position ?? 0;
      writer = await spec.open(kind.sink(dir), context(0, attempt, { checkpointed: true, bounded: true, pending }));
      for (const [id, transaction] of pending) await writer.commit!(id, transaction);
      // Committed again by a second restore, which must find them done.
      if (random() < 0.5) for (const [id, transaction] of pending) await writer.commit!(id, transaction);
      pending = [];
    }
  }
  await writer.end();
  spec.commit!(kind.sink(dir), JOB, [attempt]);
  return records;
}

describe('file sinks with checkpoints: two-phase commit of part files', () => {
  for (const kind of KINDS) {
    test(`${kind.name}: crashes, restores and repeated commits leave every record in the folder exactly once`, async () => {
      for (let seed = 1; seed <= 12; seed++) {
        const { dir, remove } = tempDir('sink-2pc');
        try {
          const out = path.join(dir, 'out');
          const records = await crashingRun(kind, out, seed);
          expect(await visible(kind, out), `seed ${seed}`).toEqual(byJson(records));
          expect(fs.readdirSync(out).filter((name) => name.startsWith('.')), `seed ${seed}: no hidden file left`).toEqual([]);
        } finally {
          remove();
        }
      }
    });
  }

  test('a checkpoint’s records are hidden until it completes, then visible under its part name; an aborted attempt’s records never are', async () => {
    const { dir, remove } = tempDir('sink-2pc');
    const kind = KINDS[0];
    try {
      const spec = sinkSpec(kind.sink(dir));
      const writer = await spec.open(kind.sink(dir), context(2, 0, { checkpointed: true, bounded: false }));
      await writer.push({ n: 1, s: 'a' });
      const first = await writer.prepareCommit!(7);
      await writer.push({ n: 2, s: 'b' });
      expect(await visible(kind, dir)).toEqual([]);
      await writer.commit!(7, first);
      expect(fs.readdirSync(dir).filter((name) => !name.startsWith('.'))).toEqual([`part-00002-${JOB}-7`]);
      expect(await visible(kind, dir)).toEqual([{ n: 1, s: 'a' }]);
      // Checkpoint 8 takes b and never completes; nothing came since, so 9 has no transaction, no file.
      expect(await writer.prepareCommit!(8)).not.toBeNull();
      expect(await writer.prepareCommit!(9)).toBeNull();
      writer.abort();
      spec.abort!(kind.sink(dir), JOB);
      expect(fs.readdirSync(dir)).toEqual([`part-00002-${JOB}-7`]);
    } finally {
      remove();
    }
  });

  test('a commit whose pending file is gone and was never committed fails with SPW_ERR_COMMIT', async () => {
    const { dir, remove } = tempDir('sink-2pc');
    const kind = KINDS[0];
    try {
      const spec = sinkSpec(kind.sink(dir));
      const writer = await spec.open(kind.sink(dir), context(0, 0, { checkpointed: true, bounded: false }));
      await writer.push({ n: 1, s: 'a' });
      const transaction = await writer.prepareCommit!(1);
      for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name));
      await expect(writer.commit!(1, transaction)).rejects.toMatchObject({ code: 'SPW_ERR_COMMIT' });
    } finally {
      remove();
    }
  });

  test(`an unbounded job without checkpoints makes what it wrote visible every ${ROLL_INTERVAL_MS / 1000} s; a cancel drops only what came since`, async () => {
    const { dir, remove } = tempDir('sink-roll');
    const kind = KINDS[1];
    try {
      const spec = sinkSpec(kind.sink(dir));
      let roll: (() => void | Promise<void>) | undefined;
      const writer = await spec.open(kind.sink(dir), context(0, 0, { checkpointed: false, bounded: false, every: (ms, mail) => void (ms === ROLL_INTERVAL_MS && (roll = mail)) }));
      expect(writer.prepareCommit, 'no transactions without checkpoints').toBeUndefined();
      await writer.push({ n: 1, s: 'a' });
      await roll!();
      await roll!();
      await writer.push({ n: 2, s: 'b' });
      await roll!();
      await writer.push({ n: 3, s: 'c' });
      writer.abort();
      spec.abort!(kind.sink(dir), JOB);
      expect(fs.readdirSync(dir).sort()).toEqual([`part-00000-${JOB}-0-r0.gz`, `part-00000-${JOB}-0-r1.gz`]);
      expect(await visible(kind, dir)).toEqual(byJson([{ n: 1, s: 'a' }, { n: 2, s: 'b' }]));
    } finally {
      remove();
    }
  });
});

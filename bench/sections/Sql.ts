/**
 * `npm run bench -- --only sql`: the Nexmark suite's SQL queries (test/fixtures/nexmark-sql,
 * as the suite writes them, into its blackhole sinks) over 1 M events (quick: 100 K) on 2
 * TaskManagers x 1 slot at parallelism 2, and in the same run the built-in typed-API job of
 * the same query where there is one: events per second per core of each (CPU seconds of
 * every cluster process), their ratio (the target: SQL within 1.2x the built-in's cost), and
 * Flink 1.13's published figure.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Catalog } from '../../src/sql/Catalog.js';
import { type SqlResult, SqlSession } from '../../src/sql/SqlSession.js';
import { type BenchCluster, withCluster } from '../cluster.js';
import type { BenchSection } from './Section.js';

const PARALLELISM = 2;
const QUERIES = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q9', 'q11', 'q12', 'q14', 'q15', 'q16', 'q17', 'q18', 'q19', 'q20', 'q21', 'q22', 'q23'];
/** The queries with a built-in job (nexmark-qN). */
const BUILT_IN = new Set(['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q11']);
/** Flink 1.13's events per second per core, published with the Nexmark suite (as bench/sections/Nexmark.ts has them; the others are not here). */
const FLINK: Record<string, number> = { q0: 155_000, q1: 158_000, q2: 175_000, q3: 152_000, q4: 34_000, q5: 22_000, q7: 12_000, q8: 146_000, q11: 40_000 };
const FIXTURES = path.resolve('test/fixtures/nexmark-sql');

interface Figure {
  query: string;
  sqlPerCore: number;
  builtinPerCore?: number;
  seconds: number;
  ratio?: number;
}

function statements(name: string, events: number): string {
  const text = fs.readFileSync(path.join(FIXTURES, `${name}.sql`), 'utf8');
  const fill: Record<string, string> = { NEXMARK_TABLE: 'datagen', TPS: '0', EVENTS_NUM: String(events), PERSON_PROPORTION: '1', AUCTION_PROPORTION: '3', BID_PROPORTION: '46', NEXMARK_DIR: '/tmp', SUBMIT_TIME: 'run', FLINK_HOME: '/tmp', COUNT_CHAR_MODULE: path.resolve('test/fixtures/sql/count_char.mjs') };
  return text.replace(/\$\{([A-Z_]+)\}/g, (whole, key: string) => fill[key] ?? whole);
}

/** The job of one query's statements, planned in this process (the JobManager plans it again from the same params). */
function sqlSubmission(name: string, events: number): Extract<SqlResult, { kind: 'job' }>['submission'] {
  const session = new SqlSession(new Catalog());
  session.execute(statements('ddl_gen', events));
  session.execute(statements('ddl_views', events));
  const job = session.execute(statements(name, events)).find((r) => r.kind === 'job');
  if (job?.kind !== 'job') throw new Error(`${name} gave no job`);
  return job.submission;
}

/** Events per CPU-second of the cluster for one job, after an untimed run of a tenth of the events. */
async function perCore(cluster: BenchCluster, body: (events: number) => { job: string; params: Record<string, unknown> }, events: number): Promise<{ perCore: number; seconds: number }> {
  await cluster.run({ ...body(Math.ceil(events / 10)), parallelism: PARALLELISM });
  const cpu = cluster.cpuSeconds();
  const status = await cluster.run({ ...body(events), parallelism: PARALLELISM });
  return { perCore: events / (cluster.cpuSeconds() - cpu), seconds: (status.ended! - status.started!) / 1000 };
}

const fmt = (n: number | undefined): string => (n === undefined || n === 0 ? '-' : Math.round(n).toLocaleString('en-US'));

export const SQL: BenchSection = {
  name: 'sql',
  about: "the Nexmark suite's SQL queries, events per second per core beside the built-in job of the same query (same run) and Flink 1.13",
  async run(quick) {
    const events = quick ? 100_000 : 1_000_000;
    // 4 GiB each: a regular join keeps every row of both inputs in its state (q4's 1 M events held about 340 MiB a task before its views were pruned, past 1 GiB's share).
    return withCluster({ taskManagers: 2, slots: 1, managedMemory: '4gb' }, async (cluster) => {
      const figures: Figure[] = [];
      for (const query of QUERIES) {
        console.error(`bench: sql ${query} over ${events} events`);
        const sql = await perCore(cluster, (n) => {
          const { job, params } = sqlSubmission(query, n);
          return { job, params: params as unknown as Record<string, unknown> };
        }, events);
        const builtin = BUILT_IN.has(query) ? await perCore(cluster, (n) => ({ job: `nexmark-${query}`, params: { events: n, sink: 'discard' } }), events) : undefined;
        figures.push({ query, sqlPerCore: sql.perCore, builtinPerCore: builtin?.perCore, seconds: sql.seconds, ratio: builtin === undefined ? undefined : builtin.perCore / sql.perCore });
        console.error(`bench: sql ${query}: ${fmt(sql.perCore)} events/s/core${builtin ? `, built-in ${fmt(builtin.perCore)}` : ''}`);
      }
      console.log(`\nNexmark SQL, ${events.toLocaleString('en-US')} events, 2 TaskManagers x 1 slot, parallelism 2; events per second per core (CPU seconds of every cluster process)`);
      console.log('query  SQL events/s/core  built-in events/s/core  cost SQL/built-in  Flink 1.13  SQL wall s');
      for (const f of figures) {
        console.log(`${f.query.padEnd(6)} ${fmt(f.sqlPerCore).padStart(17)}  ${fmt(f.builtinPerCore).padStart(22)}  ${f.ratio === undefined ? '-'.padStart(17) : `${f.ratio.toFixed(2)}x`.padStart(17)}  ${fmt(FLINK[f.query]).padStart(10)}  ${f.seconds.toFixed(2).padStart(10)}`);
      }
      return { events, figures };
    });
  },
};

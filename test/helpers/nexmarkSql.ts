/**
 * The Nexmark suite's SQL statements (test/fixtures/nexmark-sql/, as nexmark-flink's
 * `queries/` folder has them: github.com/nexmark/nexmark, Apache License 2.0 as Spillway is),
 * with their placeholders filled in: the generator's table,
 * its event count and rates, and the folders and module the queries name.
 */
import fs from 'node:fs';
import path from 'node:path';

export const NEXMARK_SQL_DIR = path.join(import.meta.dirname, '../fixtures/nexmark-sql');

/** The queries the suite runs on Spillway (q6 uses OVER aggregates over rows, which Flink itself never ran). */
export const NEXMARK_SQL_QUERIES = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q9', 'q10', 'q11', 'q12', 'q13', 'q14', 'q15', 'q16', 'q17', 'q18', 'q19', 'q20', 'q21', 'q22', 'q23'];

export interface NexmarkPlaceholders {
  events: number;
  /** Events per second: paces the generator (TPS); 10,000 when not given (the suite's event spacing). */
  tps?: number;
  /** Where q10 writes and q13 reads (NEXMARK_DIR, FLINK_HOME). */
  dir?: string;
  /** q14's count_char module. */
  countCharModule?: string;
}

/** A fixture's text with its placeholders filled. */
export function nexmarkSql(name: string, values: NexmarkPlaceholders): string {
  const text = fs.readFileSync(path.join(NEXMARK_SQL_DIR, `${name}.sql`), 'utf8');
  const fill: Record<string, string> = {
    NEXMARK_TABLE: 'datagen',
    TPS: String(values.tps ?? 10_000),
    EVENTS_NUM: String(values.events),
    PERSON_PROPORTION: '1',
    AUCTION_PROPORTION: '3',
    BID_PROPORTION: '46',
    NEXMARK_DIR: values.dir ?? '/tmp',
    FLINK_HOME: values.dir ?? '/tmp',
    SUBMIT_TIME: 'run',
    COUNT_CHAR_MODULE: values.countCharModule ?? '',
  };
  return text.replace(/\$\{([A-Z_]+)\}/g, (whole, key: string) => fill[key] ?? whole);
}

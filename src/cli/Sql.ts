/**
 * `spillway sql`: sends a file of Flink SQL statements to a JobManager's POST /sql and shows
 * what each gave: a message, a table, `submitted <job id>` for each job; a bounded SELECT's
 * rows as a table once it has finished, an unbounded one's changes as JSON lines with
 * --follow; --wait waits for every job it submitted (exit 1 if one did not finish).
 */
import { isErrorCode } from '../errors/Errors.js';
import { JobState } from '../lifecycle/JobState.js';
import type { JobDetails } from '../jobmanager/jobs/JobViews.js';
import { RestClient } from '../rest/RestClient.js';
import { jobSummary } from './JobSummary.js';

export type SqlFormat = 'table' | 'json' | 'csv';

export interface SqlOptions {
  statements: string;
  /** The JobManager to run them on (the leader, if there are several). */
  jobManager: string;
  wait: boolean;
  follow: boolean;
  format: SqlFormat;
  /** Where relative module paths of CREATE FUNCTION are read from. */
  baseDir: string;
  out?: (line: string) => void;
}

export async function runSql(options: SqlOptions): Promise<number> {
  const jm = new RestClient(options.jobManager);
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const results = await jm.sql({ statements: options.statements, baseDir: options.baseDir }, { timeoutMs: 120_000 });
  let failed = false;
  const submitted: string[] = [];
  for (const result of results) {
    if (result.kind === 'ok') out(result.message);
    else if (result.kind === 'table') print(result.columns, result.rows, options.format, out);
    else {
      out(`submitted ${result.id}`);
      submitted.push(result.id);
      if (result.columns.length === 0) continue;
      if (!result.bounded || options.follow) {
        if (!options.follow) continue;
        await jm.followResult(result.id, (record) => out(JSON.stringify(record)));
        failed ||= !(await finished(jm, result.id));
        continue;
      }
      if (!(await finished(jm, result.id))) {
        failed = true;
        continue;
      }
      const records = await jm.result(result.id);
      const rows = result.updating ? applyChanges(records) : (records as Record<string, unknown>[]);
      print(result.columns, rows.map((r) => result.columns.map((c) => r[c])), options.format, out);
    }
  }
  if (options.wait) {
    // What each job read and shuffled: on stdout beside a table, on stderr beside JSON or CSV rows.
    const summary = options.format === 'table' ? out : (line: string): void => console.error(line);
    for (const id of submitted) {
      const status = await ended(jm, id);
      summary(jobSummary(id, status));
      failed = status.state !== JobState.FINISHED || failed;
    }
  }
  return failed ? 1 : 0;
}

/** Waits for the job to end; prints a failed job's coded error; true when it FINISHED. */
async function finished(jm: RestClient, id: string): Promise<boolean> {
  return (await ended(jm, id)).state === JobState.FINISHED;
}

/** The job's status once it has ended; a failed job's coded error printed. */
async function ended(jm: RestClient, id: string): Promise<JobDetails> {
  for (;;) {
    const status = await jm.job(id);
    if (JobState.isTerminal(status.state)) {
      if (status.state !== JobState.FINISHED) console.error(`${id} ${status.state}${status.error ? `: ${isErrorCode(status.errorCode) ? `${status.errorCode}: ` : ''}${status.error}` : ''}`);
      return status;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The table a changelog leaves: inserts and update-afters added, update-befores and deletes taken out. */
export function applyChanges(records: readonly unknown[]): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  const keys: string[] = [];
  for (const record of records) {
    const { op, row } = record as { op: string; row: Record<string, unknown> };
    const key = JSON.stringify(row);
    if (op === '+I' || op === '+U') {
      rows.push(row);
      keys.push(key);
    } else {
      const at = keys.lastIndexOf(key);
      if (at >= 0) {
        rows.splice(at, 1);
        keys.splice(at, 1);
      }
    }
  }
  return rows;
}

function print(columns: string[], rows: unknown[][], format: SqlFormat, out: (line: string) => void): void {
  if (format === 'json') {
    for (const row of rows) out(JSON.stringify(Object.fromEntries(columns.map((c, i) => [c, row[i]]))));
    return;
  }
  const text = (v: unknown): string => (v === null || v === undefined ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  if (format === 'csv') {
    const field = (v: unknown): string => {
      const s = v === null || v === undefined ? '' : text(v);
      return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
    };
    out(columns.map(field).join(','));
    for (const row of rows) out(row.map(field).join(','));
    return;
  }
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => text(r[i]).length)));
  const line = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  out(line);
  out(`| ${columns.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`);
  out(line);
  for (const row of rows) out(`| ${row.map((v, i) => (typeof v === 'number' ? text(v).padStart(widths[i]!) : text(v).padEnd(widths[i]!))).join(' | ')} |`);
  out(line);
  out(`${rows.length} row${rows.length === 1 ? '' : 's'} in set`);
}

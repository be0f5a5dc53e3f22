import type { JobState } from '../lifecycle/JobState.js';

/** What of GET /jobs/:id a job's summary line reads; `sourceRecords`/`sourceBytes` absent from a JobManager that predates them. */
export interface SummarizedJob {
  state: JobState;
  durationMs: number;
  counters: { recordsIn: number; bytesIn: number; sourceRecords?: number; sourceBytes?: number };
}

const MB = 1048576;

/**
 * The line `submit --wait` and `sql --wait` print when a job ends: its state and time, what
 * its sources read (records, bytes and their rate) and what crossed its exchanges, e.g.
 * `job-0001 FINISHED in 2.00 s; read 4000000 records, 262144000 bytes (2000000 records/s, 125.0 MB/s); 96 records shuffled (48 records/s, 0.0 MB/s)`
 * (a MB is 2^20 bytes).
 */
export function jobSummary(id: string, status: SummarizedJob): string {
  const seconds = status.durationMs / 1000;
  const per = Math.max(seconds, 1e-3);
  const { recordsIn, bytesIn, sourceRecords = 0, sourceBytes = 0 } = status.counters;
  const read = `read ${sourceRecords} records, ${sourceBytes} bytes (${Math.round(sourceRecords / per)} records/s, ${(sourceBytes / MB / per).toFixed(1)} MB/s)`;
  const shuffled = `${recordsIn} records shuffled (${Math.round(recordsIn / per)} records/s, ${(bytesIn / MB / per).toFixed(1)} MB/s)`;
  return `${id} ${status.state} in ${seconds.toFixed(2)} s; ${read}; ${shuffled}`;
}

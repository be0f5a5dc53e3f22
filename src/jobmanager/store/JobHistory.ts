import { unpack } from 'msgpackr';
import { JobState } from '../../lifecycle/JobState.js';
import { TaskState } from '../../lifecycle/TaskState.js';
import type { CheckpointMetadata } from '../checkpoint/CheckpointMetadata.js';
import type { JobRecord, JobStore } from './JobStore.js';
import { log } from '../../Logger.js';

/** The reason a job that was running when its JobManager went down ends with. */
export const RESTARTED = 'JobManager restarted';

export interface HistoryLimits {
  /** Ended jobs kept (--job-history). */
  jobs: number;
  /** Bytes of collected records kept for ended jobs (--history-bytes); the oldest go first. */
  bytes: number;
}

/** What the heap keeps of a job the history answers for; all else is in the store. */
interface Entry {
  id: string;
  /** The uploaded module it runs, which is not dropped while the job is kept. */
  module?: string;
  /** Collected bytes kept in the store; counted once the job ended. */
  resultBytes: number;
  ended: boolean;
}

/**
 * Every job the JobManager answers for, live or ended, with the records in the store
 * and a small index in the heap. Ended jobs are bounded by count and by the bytes of
 * their collected records: past the count the oldest ended job is forgotten, past the
 * bytes the oldest results are dropped (the job stays, its result is then gone).
 */
export class JobHistory {
  /** By job number; a job moves to the end when it ends, so ended jobs iterate oldest-ended first. */
  private readonly entries = new Map<number, Entry>();
  /** Records written and not committed yet: reads see them meanwhile. */
  private readonly pending = new Map<number, JobRecord>();
  private keptBytes = 0;
  private nextSeq = 1;

  constructor(
    private readonly store: JobStore,
    private readonly limits: HistoryLimits,
  ) {}

  /**
   * Loads what a previous JobManager left: a job it did not end is FAILED now (its
   * tasks died with that JobManager's session), and its partial results are dropped.
   */
  recover(now = Date.now()): void {
    const records = this.store.allJobs();
    this.nextSeq = Math.max(this.store.getNumber('nextSeq') ?? 1, ...records.map((r) => r.seq + 1));
    for (const record of records) {
      if (!JobState.isTerminal(record.state)) {
        record.state = JobState.transition(record.state, JobState.FAILED, record.id);
        record.error = RESTARTED;
        record.errorCode = 'SPW_ERR_JOBMANAGER_RESTARTED';
        record.ended = now;
        record.resultBytes = 0;
        for (const task of record.tasks) if (!TaskState.isTerminal(task.state)) task.state = TaskState.transition(task.state, TaskState.CANCELED, task.id);
        void this.store.removeResults(record.seq);
        this.write(record);
      }
    }
    records.sort((a, b) => (a.ended ?? 0) - (b.ended ?? 0) || a.seq - b.seq);
    for (const record of records) this.index(record, true);
    this.trim();
  }

  /** A new job's number; ids and store keys never repeat across restarts. */
  takeSeq(): number {
    const seq = this.nextSeq++;
    void this.store.putNumber('nextSeq', this.nextSeq);
    return seq;
  }

  /** Records a job that was just submitted, so that a restart knows it ran. */
  submitted(record: JobRecord): void {
    this.index(record, false);
    this.write(record);
  }

  /** Records a job's final state; a job that did not finish keeps no results. */
  ended(record: JobRecord): void {
    if (record.state !== JobState.FINISHED && record.resultBytes > 0) {
      record.resultBytes = 0;
      void this.store.removeResults(record.seq);
    }
    this.entries.delete(record.seq);
    this.index(record, true);
    this.write(record);
    this.trim();
  }

  /** Resolves once every record written so far is durable: what was answered survives a crash. */
  async committed(): Promise<void> {
    await this.store.committed();
  }

  get(id: string, seq: number): JobRecord | undefined {
    if (this.entries.get(seq)?.id !== id) return undefined;
    return this.pending.get(seq) ?? this.store.getJob(seq);
  }

  /** Every kept job, by job number. */
  list(): JobRecord[] {
    const seqs = [...this.entries.keys()].sort((a, b) => a - b);
    return seqs.map((seq) => this.pending.get(seq) ?? this.store.getJob(seq)).filter((r): r is JobRecord => r !== undefined);
  }

  /** Stores one task's collected records, part `part` of them (as packed by its TaskManager); a repeat replaces. */
  async saveResults(seq: number, taskIndex: number, packed: Buffer, part = 0): Promise<void> {
    await this.store.putResults(seq, taskIndex, packed, part);
  }

  /** Drops what one task of a job sent so far (its attempt is sending again from the start). */
  async dropTaskResults(seq: number, taskIndex: number): Promise<void> {
    await this.store.removeResults(seq, taskIndex);
  }

  /** Drops what saveResults stored for a job that will not finish. */
  async dropResults(seq: number): Promise<void> {
    await this.store.removeResults(seq);
  }

  /** The collected records of a kept job, in task order. */
  results(seq: number): unknown[] {
    const records: unknown[] = [];
    for (const { packed } of this.store.getResults(seq)) for (const record of unpack(packed) as unknown[]) records.push(record);
    return records;
  }

  /** The stored parts of a job's collected records, in task and part order, each with where it stands. */
  resultParts(seq: number): { index: number; part: number; records: unknown[] }[] {
    return this.store.getResults(seq).map(({ index, part, packed }) => ({ index, part, records: unpack(packed) as unknown[] }));
  }

  /** Records a completed checkpoint of a job. */
  async saveCheckpoint(seq: number, metadata: CheckpointMetadata): Promise<void> {
    await this.store.putCheckpoint(seq, metadata);
  }

  /** Forgets a checkpoint of a job (deleted past its retention, or the job ended). */
  async dropCheckpoint(seq: number, id: number): Promise<void> {
    await this.store.removeCheckpoint(seq, id);
  }

  /** A job's recorded checkpoints, oldest first. */
  checkpointsOf(seq: number): CheckpointMetadata[] {
    return this.store.jobCheckpoints(seq);
  }

  /** Modules that a kept job runs: they stay whatever their age. */
  modulesInUse(): Set<string> {
    const modules = new Set<string>();
    for (const entry of this.entries.values()) if (entry.module !== undefined) modules.add(entry.module);
    return modules;
  }

  private index(record: JobRecord, ended: boolean): void {
    const resultBytes = ended ? record.resultBytes : 0;
    this.entries.set(record.seq, { id: record.id, module: record.ref.module, resultBytes, ended });
    this.keptBytes += resultBytes;
  }

  private write(record: JobRecord): void {
    this.pending.set(record.seq, record);
    this.store.putJob(record).then(
      () => {
        if (this.pending.get(record.seq) === record) this.pending.delete(record.seq);
      },
      (error: Error) => log.error({ job: record.id, err: error }, 'could not store the job'),
    );
  }

  /** Oldest ended jobs past the count go; then the oldest results past the bytes. */
  private trim(): void {
    let ended = 0;
    for (const entry of this.entries.values()) if (entry.ended) ended++;
    for (const [seq, entry] of this.entries) {
      if (ended <= this.limits.jobs) break;
      if (!entry.ended) continue;
      this.forget(seq, entry);
      ended--;
    }
    for (const [seq, entry] of this.entries) {
      if (this.keptBytes <= this.limits.bytes) break;
      if (entry.ended && entry.resultBytes > 0) this.dropKeptResults(seq, entry);
    }
  }

  private forget(seq: number, entry: Entry): void {
    this.entries.delete(seq);
    this.pending.delete(seq);
    this.keptBytes -= entry.resultBytes;
    void this.store.removeJob(seq);
  }

  private dropKeptResults(seq: number, entry: Entry): void {
    const record = this.pending.get(seq) ?? this.store.getJob(seq);
    this.keptBytes -= entry.resultBytes;
    entry.resultBytes = 0;
    void this.store.removeResults(seq);
    if (!record) return;
    record.resultBytes = 0;
    record.resultsDropped =
      `the results of job ${record.id} were dropped to keep the collected results of ended jobs within ` +
      `--history-bytes (${this.limits.bytes} bytes); run the job again, or raise --history-bytes`;
    this.write(record);
  }
}

import type { CatalogSnapshot } from '../../sql/Catalog.js';
import fs from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { JobReference, PartitionTypeName, TaskCounters } from '../../rpc/TaskDeployment.js';
import type { CompressionCodec } from '../../network/buffer/CompressionCodec.js';
import type { CheckpointMetadata } from '../checkpoint/CheckpointMetadata.js';
import type { CheckpointSummary } from '../checkpoint/CheckpointStats.js';
import type { EventTimeFigures } from '../jobs/EventTimeView.js';
import type { ErrorCode } from '../../errors/Errors.js';
import type { JobState } from '../../lifecycle/JobState.js';
import type { TaskState } from '../../lifecycle/TaskState.js';
import type { JobException } from '../jobs/JobException.js';
import type { TaskRates } from '../jobs/TaskRates.js';

/** One task of a job as GET /jobs/:id shows it. */
export interface TaskView {
  id: string;
  stage: string;
  subtask: number;
  taskManager: string;
  /** Which run of the subtask, from 0. */
  attempt: number;
  state: TaskState;
  /** Why this attempt failed or was canceled: the message and its code. */
  error?: string;
  errorCode?: ErrorCode;
  /** When its RUNNING and final reports reached the JobManager (epoch ms). */
  started?: number;
  ended?: number;
  counters: TaskCounters;
  /** Rates over the last report interval while it runs, over its life once it ended. */
  rates?: TaskRates;
}

/** One exchange of a job as GET /jobs/:id shows it. */
export interface EdgeView {
  from: string;
  to: string;
  /** Which input of `to`. */
  input: number;
  /** Its partition type, and what that type is. */
  type: PartitionTypeName;
  pipelined: boolean;
  reReadable: boolean;
  storage: string;
  /** Its codec, or false: not compressed. */
  compression: CompressionCodec | false;
  /** Records and bytes its producers wrote to it, and their rates (over the last second while they run, over their life once ended). */
  records: number;
  bytes: number;
  recordsPerSecond: number;
  bytesPerSecond: number;
  /**
   * Where the edge's buffers are now: queued in the producers' subpartitions, in
   * flight (taken from the queues, on the wire or waiting for credit), lent to the
   * consumer tasks and not yet read, and in spill files. All zero once the job ended.
   */
  buffers: { queued: number; inFlight: number; atConsumers: number; spilled: number };
}

/** What the JobManager keeps of a job: enough to answer GET /jobs/:id, never its code. */
export interface JobRecord {
  /** The job's number, from its id: the store's key and the order of GET /jobs. */
  seq: number;
  id: string;
  name: string;
  state: JobState;
  /** Why it failed: the message and its code. */
  error?: string;
  errorCode?: ErrorCode;
  parallelism: number;
  exchange: PartitionTypeName;
  /** The default codec of its edges, or false. */
  compression?: CompressionCodec | false;
  submitted: number;
  started?: number;
  ended?: number;
  ref: JobReference;
  counters: TaskCounters;
  tasks: TaskView[];
  /** Its exchanges, once it was placed (absent from records of older JobManagers). */
  edges?: EdgeView[];
  /** Bytes of collected records kept in the store for it. */
  resultBytes: number;
  /** Why its collected records are no longer kept (GET /jobs/:id/result is then a 410). */
  resultsDropped?: string;
  /** Restarts so far; absent in records of JobManagers before restarts existed. */
  restarts?: number;
  /** Every failed attempt, oldest first. */
  exceptions?: JobException[];
  /** False for a job that reads an unbounded source (absent from records of older JobManagers: bounded). */
  bounded?: boolean;
  /** An unbounded job's event time while it runs: each stage's watermark, and the sinks' latency. */
  eventTime?: EventTimeFigures;
  /** A job that takes checkpoints: their counts and the latest completed (absent from records of older JobManagers). */
  checkpoints?: CheckpointSummary;
}

/** Where collected records are kept: [job number, task index, part] (records of an older JobManager have no part). */
type ResultKey = number[];

/** An uploaded job module and the last time it was uploaded or used (ms). */
export interface StoredModule {
  source: string;
  touched: number;
}

/**
 * The JobManager's durable state in one LMDB environment under its data dir: job
 * records (by job number), collected records (msgpack as the TaskManager sent them,
 * by job number and task index, so one range read gives them in task order), uploaded
 * modules (by hash), the next job number and the SQL catalogue. Writes are asynchronous and invisible to
 * reads until committed: a caller that must read its own write awaits it.
 */
export class JobStore {
  private constructor(
    private readonly root: RootDatabase,
    private readonly jobs: Database<JobRecord, number>,
    private readonly results: Database<Buffer, ResultKey>,
    private readonly modules: Database<StoredModule, string>,
    private readonly meta: Database<number, string>,
    private readonly checkpoints: Database<CheckpointMetadata, number[]>,
    private readonly sql: Database<CatalogSnapshot, string>,
  ) {}

  static open(dir: string): JobStore {
    fs.mkdirSync(dir, { recursive: true });
    const root = open({ path: dir, maxDbs: 8 });
    return new JobStore(
      root,
      root.openDB<JobRecord, number>('jobs', {}),
      root.openDB<Buffer, ResultKey>('results', { encoding: 'binary' }),
      root.openDB<StoredModule, string>('modules', {}),
      root.openDB<number, string>('meta', {}),
      root.openDB<CheckpointMetadata, number[]>('checkpoints', {}),
      root.openDB<CatalogSnapshot, string>('sql', {}),
    );
  }

  /** The SQL catalogue (tables, views, functions), as the last statement that changed it left it. */
  getCatalog(): CatalogSnapshot | undefined {
    return this.sql.get('catalog');
  }

  putCatalog(snapshot: CatalogSnapshot): Promise<boolean> {
    return this.sql.put('catalog', snapshot);
  }

  /** Records a job's completed checkpoint (or savepoint), by job number and checkpoint id. */
  putCheckpoint(seq: number, metadata: CheckpointMetadata): Promise<boolean> {
    return this.checkpoints.put([seq, metadata.id], metadata);
  }

  removeCheckpoint(seq: number, id: number): Promise<boolean> {
    return this.checkpoints.remove([seq, id]);
  }

  /** A job's recorded checkpoints, oldest first. */
  jobCheckpoints(seq: number): CheckpointMetadata[] {
    return [...this.checkpoints.getRange({ start: [seq], end: [seq + 1] })].map((entry) => entry.value);
  }

  putJob(record: JobRecord): Promise<boolean> {
    return this.jobs.put(record.seq, record);
  }

  getJob(seq: number): JobRecord | undefined {
    return this.jobs.get(seq);
  }

  /** Every job record, by job number. */
  allJobs(): JobRecord[] {
    return [...this.jobs.getRange()].map((entry) => entry.value);
  }

  /** Drops a job's record and its collected records. */
  async removeJob(seq: number): Promise<void> {
    await Promise.all([this.jobs.remove(seq), this.removeResults(seq)]);
  }

  putResults(seq: number, taskIndex: number, packed: Buffer, part = 0): Promise<boolean> {
    return this.results.put([seq, taskIndex, part], packed);
  }

  /** A job's collected records, msgpack-packed, one buffer per task in task order. */
  /** A job's collected records, by task index and part (a key of an older JobManager, without a part, is part 0). */
  getResults(seq: number): { index: number; part: number; packed: Buffer }[] {
    return [...this.results.getRange({ start: [seq], end: [seq + 1] })].map(({ key, value }) => ({ index: key[1], part: key[2] ?? 0, packed: value }));
  }

  /** Removes a job's collected records, or one task's. */
  async removeResults(seq: number, taskIndex?: number): Promise<void> {
    const range = taskIndex === undefined ? { start: [seq], end: [seq + 1] } : { start: [seq, taskIndex], end: [seq, taskIndex + 1] };
    const keys = [...this.results.getKeys(range)];
    await Promise.all(keys.map((key) => this.results.remove(key)));
  }

  putModule(hash: string, module: StoredModule): Promise<boolean> {
    return this.modules.put(hash, module);
  }

  getModule(hash: string): StoredModule | undefined {
    return this.modules.get(hash);
  }

  removeModule(hash: string): Promise<boolean> {
    return this.modules.remove(hash);
  }

  /** Every module's hash and last upload or use, without the sources. */
  moduleTimes(): [string, number][] {
    return [...this.modules.getRange()].map((entry) => [entry.key, entry.value.touched]);
  }

  getNumber(name: string): number | undefined {
    return this.meta.get(name);
  }

  putNumber(name: string, value: number): Promise<boolean> {
    return this.meta.put(name, value);
  }

  /** Resolves once every write made so far is committed. */
  committed(): Promise<boolean> {
    return this.root.committed;
  }

  close(): Promise<void> {
    return this.root.close();
  }
}

import type { Pool, PoolClient } from 'pg';
import { SpillwayError, type ErrorCode } from '../errors/Errors.js';
import { redactUrl } from '../connectors/ServiceConnection.js';
import type { JobRecord } from '../jobmanager/store/JobStore.js';
import type { Fence } from './Fence.js';
import type { CheckpointPointer, HaServices, JobResult, StoredJob } from './HaServices.js';
import { LeaderElection, type ElectionOptions, type LeaseRow, type LeaseStore } from './LeaderElection.js';

/**
 * The cluster's tables, created on first use (under an advisory lock: JobManagers
 * start together). Every row is keyed by the cluster id: clusters share a database.
 */
const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS spillway_ha_leader (cluster_id text PRIMARY KEY, holder text NOT NULL, url text NOT NULL,
     epoch bigint NOT NULL, version bigint NOT NULL, since timestamptz NOT NULL, released boolean NOT NULL DEFAULT false)`,
  `CREATE TABLE IF NOT EXISTS spillway_ha_counters (cluster_id text NOT NULL, name text NOT NULL, value bigint NOT NULL, PRIMARY KEY (cluster_id, name))`,
  `CREATE TABLE IF NOT EXISTS spillway_ha_jobs (cluster_id text NOT NULL, job_id text NOT NULL, seq bigint NOT NULL, submitted bigint NOT NULL,
     body jsonb NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (cluster_id, job_id))`,
  `CREATE TABLE IF NOT EXISTS spillway_ha_modules (cluster_id text NOT NULL, hash text NOT NULL, source text NOT NULL, PRIMARY KEY (cluster_id, hash))`,
  `CREATE TABLE IF NOT EXISTS spillway_ha_checkpoints (cluster_id text NOT NULL, job_id text NOT NULL, checkpoint_id bigint NOT NULL,
     folder text NOT NULL, checksum text NOT NULL, savepoint boolean NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (cluster_id, job_id, checkpoint_id))`,
  `CREATE TABLE IF NOT EXISTS spillway_ha_results (cluster_id text NOT NULL, job_id text NOT NULL, state text NOT NULL, ended bigint NOT NULL,
     error_code text, epoch bigint NOT NULL, PRIMARY KEY (cluster_id, job_id))`,
  // The ended job's record (GET /jobs on any later leader); a store made before it had none.
  `ALTER TABLE spillway_ha_results ADD COLUMN IF NOT EXISTS record jsonb`,
];

/** Every table of the HA services, for a test or an operator that drops a cluster's store. */
export const HA_TABLES = ['spillway_ha_leader', 'spillway_ha_counters', 'spillway_ha_jobs', 'spillway_ha_modules', 'spillway_ha_checkpoints', 'spillway_ha_results'];

/** The lock the schema is made under. */
const SCHEMA_LOCK = 'spillway_ha_schema';

/** The election's options (this contender, its URL, the lease), and where the store is. */
export interface PostgresHaOptions extends ElectionOptions {
  /** postgres://USER@HOST:PORT/DB (--ha). */
  databaseUrl: string;
  /** --cluster-id: every JobManager of the cluster gives the same. */
  clusterId: string;
}

/**
 * HA services on PostgreSQL through node-postgres: a pool of a few connections (a
 * connection lost with a restarted server is replaced at the next query), each query
 * bounded by the lease, so that a database that hangs cannot hold a leader's acts past
 * its deadline. Module sources are kept in the database; checkpoints by their pointer
 * (folder in the shared checkpoint directory) and the checksum of their `_metadata`.
 */
export class PostgresHaServices implements HaServices, LeaseStore {
  readonly kind = 'postgres';
  readonly election: LeaderElection;
  private schema: Promise<void> | null = null;

  private constructor(
    private readonly pool: Pool,
    private readonly options: PostgresHaOptions,
    fence: Fence,
  ) {
    this.election = new LeaderElection(this, fence, options);
  }

  static async create(options: PostgresHaOptions, fence: Fence): Promise<PostgresHaServices> {
    const { default: pg } = await import('pg');
    const timeout = options.leaseMs ?? 3000;
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4, connectionTimeoutMillis: timeout, query_timeout: timeout, idleTimeoutMillis: 10_000 });
    // A connection that breaks while idle (the server restarted) is dropped by the pool; the next query opens another.
    pool.on('error', () => undefined);
    return new PostgresHaServices(pool, options, fence);
  }

  private get cluster(): string {
    return this.options.clusterId;
  }

  // The lease (LeaseStore).

  async read(): Promise<LeaseRow | undefined> {
    const { rows } = await this.query<LeaseDbRow>('SELECT * FROM spillway_ha_leader WHERE cluster_id = $1', [this.cluster]);
    return rows[0] && leaseRow(rows[0]);
  }

  async take(holder: string, url: string, seen: Pick<LeaseRow, 'epoch' | 'version'> | undefined): Promise<LeaseRow | undefined> {
    const { rows } =
      seen === undefined
        ? await this.query<LeaseDbRow>(
            `INSERT INTO spillway_ha_leader (cluster_id, holder, url, epoch, version, since) VALUES ($1, $2, $3, 1, 0, now())
             ON CONFLICT (cluster_id) DO NOTHING RETURNING *`,
            [this.cluster, holder, url],
          )
        : await this.query<LeaseDbRow>(
            `UPDATE spillway_ha_leader SET holder = $2, url = $3, epoch = epoch + 1, version = 0, since = now(), released = false
             WHERE cluster_id = $1 AND epoch = $4 AND version = $5 RETURNING *`,
            [this.cluster, holder, url, seen.epoch, seen.version],
          );
    return rows[0] && leaseRow(rows[0]);
  }

  async renew(holder: string, epoch: number): Promise<boolean> {
    const { rowCount } = await this.query(
      'UPDATE spillway_ha_leader SET version = version + 1 WHERE cluster_id = $1 AND holder = $2 AND epoch = $3 AND NOT released',
      [this.cluster, holder, epoch],
    );
    return rowCount === 1;
  }

  async release(holder: string, epoch: number): Promise<void> {
    await this.query('UPDATE spillway_ha_leader SET released = true WHERE cluster_id = $1 AND holder = $2 AND epoch = $3', [this.cluster, holder, epoch]);
  }

  // The stores (HaServices).

  async nextJobSeq(): Promise<number> {
    const { rows } = await this.query<{ value: string }>(
      `INSERT INTO spillway_ha_counters (cluster_id, name, value) VALUES ($1, 'job', 1)
       ON CONFLICT (cluster_id, name) DO UPDATE SET value = spillway_ha_counters.value + 1 RETURNING value`,
      [this.cluster],
    );
    return Number(rows[0].value);
  }

  async putJob(epoch: number, job: StoredJob): Promise<void> {
    await this.fenced(epoch, 'store the job', (client) =>
      client.query('INSERT INTO spillway_ha_jobs (cluster_id, job_id, seq, submitted, body, epoch) VALUES ($1, $2, $3, $4, $5, $6)', [
        this.cluster,
        job.id,
        job.seq,
        job.submitted,
        JSON.stringify(job.body),
        epoch,
      ]),
    );
  }

  async unfinishedJobs(): Promise<StoredJob[]> {
    const { rows } = await this.query<{ job_id: string; seq: string; submitted: string; body: Record<string, unknown> }>(
      `SELECT job_id, seq, submitted, body FROM spillway_ha_jobs j WHERE cluster_id = $1
       AND NOT EXISTS (SELECT 1 FROM spillway_ha_results r WHERE r.cluster_id = j.cluster_id AND r.job_id = j.job_id) ORDER BY seq`,
      [this.cluster],
    );
    return rows.map((row) => ({ id: row.job_id, seq: Number(row.seq), submitted: Number(row.submitted), body: row.body }));
  }

  async putModule(hash: string, source: string): Promise<void> {
    await this.query('INSERT INTO spillway_ha_modules (cluster_id, hash, source) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [this.cluster, hash, source]);
  }

  async module(hash: string): Promise<string | undefined> {
    const { rows } = await this.query<{ source: string }>('SELECT source FROM spillway_ha_modules WHERE cluster_id = $1 AND hash = $2', [this.cluster, hash]);
    return rows[0]?.source;
  }

  async addCheckpoint(epoch: number, pointer: CheckpointPointer): Promise<void> {
    await this.fenced(epoch, `complete checkpoint ${pointer.id} of job ${pointer.jobId}`, (client) =>
      client.query(
        `INSERT INTO spillway_ha_checkpoints (cluster_id, job_id, checkpoint_id, folder, checksum, savepoint, epoch) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (cluster_id, job_id, checkpoint_id) DO UPDATE SET folder = EXCLUDED.folder, checksum = EXCLUDED.checksum, epoch = EXCLUDED.epoch`,
        [this.cluster, pointer.jobId, pointer.id, pointer.folder, pointer.checksum, pointer.savepoint, epoch],
      ),
    );
  }

  async checkpoints(jobId: string): Promise<CheckpointPointer[]> {
    const { rows } = await this.query<{ checkpoint_id: string; folder: string; checksum: string; savepoint: boolean }>(
      'SELECT checkpoint_id, folder, checksum, savepoint FROM spillway_ha_checkpoints WHERE cluster_id = $1 AND job_id = $2 ORDER BY checkpoint_id',
      [this.cluster, jobId],
    );
    return rows.map((row) => ({ jobId, id: Number(row.checkpoint_id), folder: row.folder, checksum: row.checksum, savepoint: row.savepoint }));
  }

  async removeCheckpoint(jobId: string, id: number): Promise<void> {
    await this.query('DELETE FROM spillway_ha_checkpoints WHERE cluster_id = $1 AND job_id = $2 AND checkpoint_id = $3 AND NOT savepoint', [this.cluster, jobId, id]);
  }

  async putResult(epoch: number, result: JobResult): Promise<void> {
    await this.fenced(epoch, `record the end of job ${result.jobId}`, async (client) => {
      await client.query(
        `INSERT INTO spillway_ha_results (cluster_id, job_id, state, ended, error_code, epoch, record) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
        [this.cluster, result.jobId, result.state, result.ended, result.errorCode ?? null, epoch, result.record ? JSON.stringify(result.record) : null],
      );
      // An ended job is never run again: its definition and checkpoint pointers go (a savepoint's record stays).
      await client.query('DELETE FROM spillway_ha_jobs WHERE cluster_id = $1 AND job_id = $2', [this.cluster, result.jobId]);
      await client.query('DELETE FROM spillway_ha_checkpoints WHERE cluster_id = $1 AND job_id = $2 AND NOT savepoint', [this.cluster, result.jobId]);
    });
  }

  async result(jobId: string): Promise<JobResult | undefined> {
    const { rows } = await this.query<ResultDbRow>('SELECT * FROM spillway_ha_results WHERE cluster_id = $1 AND job_id = $2', [this.cluster, jobId]);
    return rows[0] && jobResult(rows[0]);
  }

  async results(limit: number): Promise<JobResult[]> {
    const { rows } = await this.query<ResultDbRow>('SELECT * FROM spillway_ha_results WHERE cluster_id = $1 ORDER BY ended DESC, job_id DESC LIMIT $2', [
      this.cluster,
      limit,
    ]);
    return rows.map(jobResult);
  }

  async close(): Promise<void> {
    await this.election.close();
    await this.pool.end().catch(() => undefined);
  }

  /**
   * Runs `write` in a transaction that first locks the lease row at `epoch` (FOR SHARE:
   * a standby's takeover waits for it, and a takeover before it leaves no row to lock):
   * the write happens only while `epoch` leads. SPW_ERR_FENCED otherwise.
   */
  private async fenced(epoch: number, what: string, write: (client: PoolClient) => Promise<unknown>): Promise<void> {
    await this.ready();
    this.election.fence.check(what);
    const client = await this.connect();
    try {
      await client.query('BEGIN');
      const { rowCount } = await client.query('SELECT 1 FROM spillway_ha_leader WHERE cluster_id = $1 AND epoch = $2 AND NOT released FOR SHARE', [this.cluster, epoch]);
      if (rowCount !== 1) throw new SpillwayError('SPW_ERR_FENCED', `${what}: epoch ${epoch} no longer leads cluster ${this.cluster}`);
      await write(client);
      // The lease may have ended while the database took its time: then nothing is committed.
      this.election.fence.check(what);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw this.storeError(error);
    } finally {
      client.release();
    }
  }

  private async query<R extends object = Record<string, unknown>>(text: string, values: unknown[]): Promise<{ rows: R[]; rowCount: number | null }> {
    await this.ready();
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw this.storeError(error);
    }
  }

  private async connect(): Promise<PoolClient> {
    try {
      return await this.pool.connect();
    } catch (error) {
      throw this.storeError(error);
    }
  }

  /** Makes the tables once; a failure is tried again at the next call. */
  private ready(): Promise<void> {
    this.schema ??= this.makeSchema().catch((error: unknown) => {
      this.schema = null;
      throw this.storeError(error);
    });
    return this.schema;
  }

  private async makeSchema(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [SCHEMA_LOCK]);
      for (const statement of SCHEMA) await client.query(statement);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private storeError(error: unknown): Error {
    if (error instanceof SpillwayError) return error;
    return new SpillwayError('SPW_ERR_HA_STORE', `the HA store at ${redactUrl(this.options.databaseUrl)} failed: ${(error as Error).message}`, { cause: error });
  }
}

interface LeaseDbRow {
  holder: string;
  url: string;
  epoch: string;
  version: string;
  since: Date;
  released: boolean;
}

interface ResultDbRow {
  job_id: string;
  state: string;
  ended: string;
  error_code: string | null;
  record: JobRecord | null;
}

function jobResult(row: ResultDbRow): JobResult {
  return {
    jobId: row.job_id,
    state: row.state,
    ended: Number(row.ended),
    ...(row.error_code ? { errorCode: row.error_code as ErrorCode } : {}),
    ...(row.record ? { record: row.record } : {}),
  };
}

function leaseRow(row: LeaseDbRow): LeaseRow {
  return { holder: row.holder, url: row.url, epoch: Number(row.epoch), version: Number(row.version), since: row.since.getTime(), released: row.released };
}

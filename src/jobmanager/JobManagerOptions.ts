import os from 'node:os';
import path from 'node:path';
import type { ServerOptions } from '../ServerOptions.js';
import type { RestartStrategy } from './failover/RestartStrategy.js';

/** --heartbeat-timeout: a TaskManager silent this long is lost. */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 10_000;
/** --slot-timeout: how long a job (or a restart) waits for free slots before it fails. */
export const DEFAULT_SLOT_TIMEOUT_MS = 60_000;
/** --job-history: ended jobs kept, with their results. */
export const DEFAULT_JOB_HISTORY = 100;
/** --history-bytes: bytes of collected results kept for ended jobs. */
export const DEFAULT_HISTORY_BYTES = 256 << 20;
/** --max-module-size: a job module is code, not data; 16 MiB is far above any real one. */
export const DEFAULT_MAX_MODULE_BYTES = 16 << 20;
/** --module-ttl: how long a module no kept job runs stays after its last upload or use. */
export const DEFAULT_MODULE_TTL_MS = 3_600_000;
/** --module-load-timeout: how long a submitted module may take to load and define its job. */
export const DEFAULT_MODULE_LOAD_TIMEOUT_MS = 10_000;

/** The data dir of a JobManager listening on `port` that was given none. */
export function defaultDataDir(port: number): string {
  return path.join(os.tmpdir(), `spillway-jobmanager-${port}`);
}

/** A JobManager's settings; each absent one takes the default named above. */
export interface JobManagerOptions extends ServerOptions {
  /** DEFAULT_JOBMANAGER_PORT if absent; 0 for any free port. */
  port?: number;
  heartbeatTimeoutMs?: number;
  slotTimeoutMs?: number;
  jobHistory?: number;
  historyBytes?: number;
  moduleTtlMs?: number;
  /**
   * The durable state: job history, kept results, uploaded modules. By default
   * defaultDataDir(port bound), so that a JobManager restarted on the same port finds it.
   */
  dataDir?: string;
  /** A job's restart strategy unless it sets one (DEFAULT_RESTART: fixed-delay, 3 attempts, 1000 ms). */
  restart?: RestartStrategy;
  moduleLoadTimeoutMs?: number;
  /** The largest module upload, bytes; larger is a 413. */
  maxModuleBytes?: number;
  /** Where jobs' checkpoints go unless a job says otherwise. */
  checkpointDir?: string;
  /** High availability (--ha, --cluster-id): absent, one JobManager as before. */
  ha?: HaOptions;
}

/** A JobManager of a highly available cluster: where the HA store is, which cluster, and the lease. */
export interface HaOptions {
  /** postgres://USER@HOST:PORT/DB. */
  url: string;
  clusterId: string;
  /** --ha-renew-interval (DEFAULT_RENEW_INTERVAL_MS). */
  renewIntervalMs?: number;
  /** --ha-lease (DEFAULT_LEASE_MS). */
  leaseMs?: number;
  /** The URL other JobManagers and clients reach this one at (the URL it listens at if absent). */
  advertiseUrl?: string;
}

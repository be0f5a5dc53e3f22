import type { ClusterSecret } from '../security/ClusterSecret.js';

/** `spillway local --taskmanagers`: TaskManager processes of a local cluster. */
export const DEFAULT_TASKMANAGERS = 2;
/** How long a local cluster waits for its TaskManagers to register. */
export const REGISTRATION_TIMEOUT_MS = 30_000;
/** How long a stopped process of a local cluster has between SIGTERM and SIGKILL. */
export const STOP_GRACE_MS = 3000;

export interface LocalClusterOptions {
  taskManagers: number;
  slots: number;
  port?: number;
  memory?: string;
  /** Managed memory of every TaskManager, e.g. `64mb`. */
  managedMemory?: string;
  /** Network buffer size of every TaskManager, e.g. `32kb`. */
  bufferSize?: string;
  heartbeatTimeoutMs?: number;
  /** Passed to every process whose command takes the option (--cancel-timeout reaches the TaskManagers only); an option no process takes is SPW_ERR_USAGE. */
  extraArgs?: string[];
  /** Passed to the JobManager only (e.g. `--job-history 10`); without `--data-dir` it keeps its data in the cluster's temp folder. */
  jobManagerArgs?: string[];
  /** Node options of the JobManager process (e.g. `--max-old-space-size=256`, `--expose-gc`). */
  jobManagerNodeArgs?: string[];
  /** Where the children write; 'inherit' shows their logs, 'pipe' gives each child's stderr to read (read it, or it fills). */
  stdio?: 'inherit' | 'ignore' | 'pipe';
  /** The cluster's secret; one is made if absent. Given to the children in their environment, never on a command line. */
  secret?: ClusterSecret;
  /** The cluster's folder (default: a fresh temp folder); removed on stop. */
  dataDir?: string;
  /** JobManager processes (`--jobmanagers`, default 1); more than one needs `ha`: one leads, the others stand by. */
  jobManagers?: number;
  /** High availability (`--ha URL`): the JobManagers elect their leader and keep the cluster's jobs in this PostgreSQL. */
  ha?: { url: string; clusterId?: string };
}

import type { ClusterSecret } from './security/ClusterSecret.js';
import type { TlsMaterial } from './security/TlsFiles.js';

/** Servers bind to loopback unless told otherwise (--host). */
export const DEFAULT_HOST = '127.0.0.1';

/** The JobManager's REST port (--port), and where clients look for it. */
export const DEFAULT_JOBMANAGER_PORT = 8081;

/** The JobManager clients call unless told otherwise (--jobmanager). */
export const DEFAULT_JOBMANAGER_URL = `http://${DEFAULT_HOST}:${DEFAULT_JOBMANAGER_PORT}`;

/** --metrics-retention: how long an ended job's (and its tasks') series stay in /metrics. */
export const DEFAULT_METRICS_RETENTION_MS = 300_000;

/** What every server process (JobManager, TaskManager) is configured with. */
export interface ServerOptions {
  /** Interface its servers bind; DEFAULT_HOST if absent. */
  host?: string;
  /** The cluster secret: its REST wants it, its calls carry it, its data connections authenticate with a key derived from it. Without it only loopback is allowed. */
  secret?: ClusterSecret | null;
  /** https for its REST API (and, for a TaskManager, mutual TLS for its data connections). */
  tls?: TlsMaterial | null;
  /** Allows a non-loopback host without a secret (with a warning). */
  insecure?: boolean;
  /** How long an ended job's series stay in /metrics; DEFAULT_METRICS_RETENTION_MS if absent. */
  metricsRetentionMs?: number;
}

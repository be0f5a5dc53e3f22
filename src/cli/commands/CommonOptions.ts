import path from 'node:path';
import { DEFAULT_RESTART, defaultStrategy, restartSchema, type RestartStrategy } from '../../jobmanager/failover/RestartStrategy.js';
import { DEFAULT_LOG_LEVEL, LOG_LEVELS, setLogLevel } from '../../Logger.js';
import { useClientCredentials } from '../../rpc/HttpClient.js';
import { ClusterSecret } from '../../security/ClusterSecret.js';
import { loadTls, type TlsMaterial } from '../../security/TlsFiles.js';
import { DEFAULT_METRICS_RETENTION_MS } from '../../ServerOptions.js';
import {
  DEFAULT_BUFFER_SIZE,
  DEFAULT_CANCEL_TIMEOUT_MS,
  DEFAULT_MANAGED_MEMORY,
  DEFAULT_NETWORK_MEMORY,
  DEFAULT_SLOTS,
} from '../../taskmanager/TaskManagerOptions.js';
import type { OptionTable, OptionValues } from '../OptionTable.js';

/** Every command: how much it logs, and the secret and TLS files it calls (or serves) with. */
export const COMMON_OPTIONS = {
  'log-level': { type: LOG_LEVELS, help: `how much to log, as JSON lines on stderr (readable on a terminal); default ${DEFAULT_LOG_LEVEL}, or SPILLWAY_LOG_LEVEL` },
  'secret-file': { type: 'string', placeholder: 'FILE', help: 'the cluster secret (at least 32 characters); SPILLWAY_SECRET if absent' },
  'tls-cert': { type: 'string', placeholder: 'PEM', help: "this process's certificate (https and mutual TLS; with --tls-key and --tls-ca)" },
  'tls-key': { type: 'string', placeholder: 'PEM', help: "this process's private key" },
  'tls-ca': { type: 'string', placeholder: 'PEM', help: 'the CA that signed every process of the cluster' },
} as const satisfies OptionTable;

/** The servers (jobmanager, taskmanager). */
export const INSECURE_OPTION = {
  insecure: { type: 'boolean', help: 'allow a non-loopback --host without a cluster secret (with a warning)' },
} as const satisfies OptionTable;

/** Every process that keeps metrics (jobmanager, taskmanager, and local for both). */
export const METRICS_OPTIONS = {
  'metrics-retention': { type: 'duration-ms', default: DEFAULT_METRICS_RETENTION_MS, help: "how long an ended job's series stay in /metrics" },
} as const satisfies OptionTable;

/** Every process of a cluster that takes part in checkpoints (jobmanager, taskmanager, and local for both). */
export const CHECKPOINT_OPTIONS = {
  'checkpoint-dir': { type: 'string', placeholder: 'DIR', help: "where jobs' checkpoints go unless a job says otherwise: a local disk for one host, a filesystem every host mounts for several" },
} as const satisfies OptionTable;

/** Every process that names or makes partitions. */
export const PARTITION_TYPE_OPTIONS = {
  'partition-type': { type: 'string', multiple: true, placeholder: 'FILE', help: 'a module that registers a partition type, loaded before anything is served' },
} as const satisfies OptionTable;

const FIXED = defaultStrategy('fixed-delay') as Extract<RestartStrategy, { strategy: 'fixed-delay' }>;
const EXPONENTIAL = defaultStrategy('exponential-delay') as Extract<RestartStrategy, { strategy: 'exponential-delay' }>;

/** A failed job's restart strategy: the JobManager's default (jobmanager, local) or one job's (submit). */
export const RESTART_OPTIONS = {
  'restart-strategy': { type: restartSchema.properties.strategy.enum, help: `how a failed job is tried again (the JobManager's default: ${DEFAULT_RESTART.strategy})` },
  'restart-attempts': { type: 'int', min: 0, help: `restarts after the first failure (${FIXED.attempts} for fixed-delay, ${EXPONENTIAL.attempts} for exponential-delay)` },
  'restart-delay': { type: 'duration-ms', min: 0, help: `the wait before a restart, the first one for exponential-delay (${FIXED.delayMs})` },
} as const satisfies OptionTable;

/** A TaskManager's slots and memory: the taskmanager's own, and every TaskManager's of a local cluster. */
export const TASK_OPTIONS = {
  slots: { type: 'int', default: DEFAULT_SLOTS, help: 'task slots, each a thread' },
  memory: { type: 'size', default: DEFAULT_NETWORK_MEMORY, help: 'network memory, shared by the task threads' },
  'managed-memory': { type: 'size', default: DEFAULT_MANAGED_MEMORY, help: 'memory divided among the slots for sorts, aggregations and joins' },
  'buffer-size': { type: 'size', default: DEFAULT_BUFFER_SIZE, help: 'a network buffer' },
  'cancel-timeout': { type: 'duration-ms', default: DEFAULT_CANCEL_TIMEOUT_MS, help: "how long a canceled task may take to stop before its thread is terminated" },
  'task-heap': { type: 'size', help: "a task thread's heap limit (V8's default if absent)" },
  ...PARTITION_TYPE_OPTIONS,
  ...METRICS_OPTIONS,
  ...CHECKPOINT_OPTIONS,
} as const satisfies OptionTable;

/** The strategy the --restart-* options name, or undefined when none is given. */
export function restartOf(values: OptionValues<typeof RESTART_OPTIONS>): RestartStrategy | undefined {
  const { 'restart-strategy': name, 'restart-attempts': attempts, 'restart-delay': delay } = values;
  if (name === undefined && attempts === undefined && delay === undefined) return undefined;
  return defaultStrategy(name ?? DEFAULT_RESTART.strategy, attempts, delay);
}

/** The --restart-* options as given, for a child process. */
export function restartArgs(values: OptionValues<typeof RESTART_OPTIONS>): string[] {
  return (['restart-strategy', 'restart-attempts', 'restart-delay'] as const).flatMap((name) => (values[name] === undefined ? [] : [`--${name}`, String(values[name])]));
}

/** The absolute paths of --partition-type. */
export function partitionTypeFiles(values: OptionValues<typeof PARTITION_TYPE_OPTIONS>): string[] {
  return values['partition-type'].map((file) => path.resolve(file));
}

export interface Security {
  secret: ClusterSecret | null;
  tls: TlsMaterial | null;
}

/**
 * Applies the options every command has: the log level, then the cluster secret
 * (from --secret-file, SPILLWAY_SECRET or `fallbackSecretFile`) and TLS files, which
 * this process's own calls carry from then on.
 */
export function useCommonOptions(values: OptionValues<typeof COMMON_OPTIONS>, fallbackSecretFile?: string): Security {
  if (values['log-level'] !== undefined) setLogLevel(values['log-level']);
  const tls = loadTls({ cert: values['tls-cert'], key: values['tls-key'], ca: values['tls-ca'] });
  const secret = ClusterSecret.resolve({ file: values['secret-file'], env: process.env, fallbackFile: fallbackSecretFile });
  useClientCredentials({ token: secret?.token, tls });
  return { secret, tls };
}

/** The TLS options again, their files absolute, for a child process. */
export function tlsArgs(values: OptionValues<typeof COMMON_OPTIONS>): string[] {
  return (['tls-cert', 'tls-key', 'tls-ca'] as const).flatMap((name) => (values[name] === undefined ? [] : [`--${name}`, path.resolve(values[name])]));
}

import { JobManager } from '../../jobmanager/JobManager.js';
import {
  DEFAULT_HEARTBEAT_TIMEOUT_MS,
  DEFAULT_HISTORY_BYTES,
  DEFAULT_JOB_HISTORY,
  DEFAULT_MAX_MODULE_BYTES,
  DEFAULT_MODULE_LOAD_TIMEOUT_MS,
  DEFAULT_MODULE_TTL_MS,
  DEFAULT_SLOT_TIMEOUT_MS,
} from '../../jobmanager/JobManagerOptions.js';
import { DEFAULT_LEASE_MS, DEFAULT_RENEW_INTERVAL_MS } from '../../ha/LeaderElection.js';
import { SpillwayError } from '../../errors/Errors.js';
import { loadPartitionTypes } from '../../network/networkThread/partition/PartitionTypes.js';
import { DEFAULT_HOST, DEFAULT_JOBMANAGER_PORT } from '../../ServerOptions.js';
import { defineCommand, SERVING } from '../Command.js';
import type { OptionTable } from '../OptionTable.js';
import { stopOnSignal } from '../StopOnSignal.js';
import path from 'node:path';
import { CHECKPOINT_OPTIONS, COMMON_OPTIONS, INSECURE_OPTION, METRICS_OPTIONS, PARTITION_TYPE_OPTIONS, partitionTypeFiles, RESTART_OPTIONS, restartOf, useCommonOptions } from './CommonOptions.js';

/** A TCP port; 0 asks for any free one. */
export const PORT = { type: 'int', min: 0, max: 65535 } as const;

export const JOBMANAGER_OPTIONS = {
  host: { type: 'string', placeholder: 'HOST', default: DEFAULT_HOST, help: 'the interface the REST API binds' },
  port: { ...PORT, default: DEFAULT_JOBMANAGER_PORT, help: 'the REST port; 0 for any free one' },
  'heartbeat-timeout': { type: 'duration-ms', default: DEFAULT_HEARTBEAT_TIMEOUT_MS, help: 'a TaskManager silent this long is lost' },
  'slot-timeout': { type: 'duration-ms', default: DEFAULT_SLOT_TIMEOUT_MS, help: 'how long a job (or a restart) waits for free slots before it fails' },
  'job-history': { type: 'int', default: DEFAULT_JOB_HISTORY, help: 'ended jobs kept, with their results' },
  'history-bytes': { type: 'size', default: DEFAULT_HISTORY_BYTES, help: 'bytes of collected results kept for ended jobs' },
  'module-ttl': { type: 'duration-ms', default: DEFAULT_MODULE_TTL_MS, help: 'how long a module no kept job runs stays after its last upload or use' },
  'max-module-size': { type: 'size', default: DEFAULT_MAX_MODULE_BYTES, help: 'the largest module upload' },
  'module-load-timeout': { type: 'duration-ms', default: DEFAULT_MODULE_LOAD_TIMEOUT_MS, help: 'how long a submitted module may take to load and define its job' },
  'data-dir': { type: 'string', placeholder: 'DIR', help: 'job history, kept results and modules (default: spillway-jobmanager-PORT in the temp folder)' },
  ha: { type: 'string', placeholder: 'postgres://USER@HOST:PORT/DB', help: 'high availability: leader election and the jobs, checkpoints and results of the cluster in this PostgreSQL (one JobManager without)' },
  'cluster-id': { type: 'string', placeholder: 'NAME', help: 'with --ha: the cluster this JobManager leads or stands by for (every JobManager of it the same)' },
  'ha-renew-interval': { type: 'duration-ms', min: 10, default: DEFAULT_RENEW_INTERVAL_MS, help: 'with --ha: how often the leader renews its lease, and standbys look at it' },
  'ha-lease': { type: 'duration-ms', min: 100, default: DEFAULT_LEASE_MS, help: 'with --ha: a leader that could not renew for this long steps down; a standby takes over after it' },
  'advertise-url': { type: 'url', help: 'with --ha: the URL other JobManagers send clients to (the URL listened at by default)' },
  ...RESTART_OPTIONS,
  ...PARTITION_TYPE_OPTIONS,
  ...METRICS_OPTIONS,
  ...CHECKPOINT_OPTIONS,
  ...INSECURE_OPTION,
  ...COMMON_OPTIONS,
} as const satisfies OptionTable;

export const jobManagerCommand = defineCommand({
  name: 'jobmanager',
  summary: 'The JobManager: REST API, TaskManager registry, scheduler, partition tracker.',
  options: JOBMANAGER_OPTIONS,
  async run(values) {
    const { secret, tls } = useCommonOptions(values);
    await loadPartitionTypes(partitionTypeFiles(values));
    const ha = values.ha;
    if ((ha === undefined) !== (values['cluster-id'] === undefined)) throw new SpillwayError('SPW_ERR_USAGE', '--ha and --cluster-id go together: every JobManager of a cluster gives the same two');
    if (ha !== undefined && !/^postgres(ql)?:\/\//.test(ha)) throw new SpillwayError('SPW_ERR_USAGE', `--ha must be a postgres:// URL, not "${ha}"`);
    if (values['ha-lease'] <= values['ha-renew-interval']) throw new SpillwayError('SPW_ERR_USAGE', '--ha-lease must be longer than --ha-renew-interval');
    const jm = new JobManager({
      host: values.host,
      port: values.port,
      heartbeatTimeoutMs: values['heartbeat-timeout'],
      slotTimeoutMs: values['slot-timeout'],
      jobHistory: values['job-history'],
      historyBytes: values['history-bytes'],
      moduleTtlMs: values['module-ttl'],
      maxModuleBytes: values['max-module-size'],
      dataDir: values['data-dir'],
      metricsRetentionMs: values['metrics-retention'],
      restart: restartOf(values),
      moduleLoadTimeoutMs: values['module-load-timeout'],
      checkpointDir: values['checkpoint-dir'] === undefined ? undefined : path.resolve(values['checkpoint-dir']),
      secret,
      tls,
      insecure: values.insecure,
      ha: ha === undefined ? undefined : { url: ha, clusterId: values['cluster-id']!, renewIntervalMs: values['ha-renew-interval'], leaseMs: values['ha-lease'], advertiseUrl: values['advertise-url'] },
    });
    const url = await jm.listen();
    console.log(`spillway jobmanager listening on ${url} with its data in ${jm.dataDir}`);
    stopOnSignal(() => jm.close());
    return SERVING;
  },
});

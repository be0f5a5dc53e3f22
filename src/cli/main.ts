import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { useClientCredentials } from '../job/Http.js';
import { JobManager } from '../jobmanager/JobManager.js';
import { log, setLogLevel } from '../Logger.js';
import { loadPartitionTypes } from '../network/partition/PartitionTypes.js';
import { defaultStrategy, type RestartStrategy, type RestartStrategyName } from '../jobmanager/RestartStrategy.js';
import { ClusterSecret, isLoopback } from '../security/ClusterSecret.js';
import { loadTls } from '../security/TlsFiles.js';
import { TaskManager } from '../taskmanager/TaskManager.js';
import { LocalCluster, localSecretFile } from './LocalCluster.js';
import { parseSize } from './Size.js';
import { submit } from './Submit.js';

const USAGE = `usage:
  spillway jobmanager [--host 127.0.0.1] [--port 8081] [--heartbeat-timeout MS] [--slot-timeout MS] [--job-history N]
                      [--history-bytes SIZE] [--module-ttl MS] [--max-module-size SIZE] [--data-dir DIR] [--partition-type FILE ...]
                      [--module-load-timeout MS] [--restart-strategy none|fixed-delay|exponential-delay] [--restart-attempts N] [--restart-delay MS] [--metrics-retention MS]
  spillway taskmanager --jobmanager URL [--slots N] [--memory SIZE] [--managed-memory SIZE] [--buffer-size SIZE] [--spill-dir DIR]
                       [--host 127.0.0.1] [--advertise-host HOST] [--cancel-timeout MS] [--task-heap SIZE] [--partition-type FILE ...]
                       [--metrics-retention MS]
  spillway local [--taskmanagers N] [--slots N] [--memory SIZE] [--managed-memory SIZE] [--buffer-size SIZE] [--port 8081]
                 [--cancel-timeout MS] [--task-heap SIZE] [--partition-type FILE ...] [--restart-strategy S] [--restart-attempts N] [--restart-delay MS]
                 [--metrics-retention MS]
  every command: [--log-level fatal|error|warn|info|debug|trace|silent] (JSON lines on stderr; readable on a terminal)
  spillway submit (JOB_NAME | FILE) [--jobmanager URL] [--param k=v ...] [--parallelism N]
                  [--exchange pipelined|blocking|sort-merge|hybrid|TYPE] [--compression] [--compression-codec snappy|brotli] [--wait] [--typecheck]
                  [--restart-strategy none|fixed-delay|exponential-delay] [--restart-attempts N] [--restart-delay MS]
                  (FILE: a job module, .mjs/.js, or .ts/.mts with its types stripped before upload)
every command: [--secret-file FILE] [--tls-cert PEM --tls-key PEM --tls-ca PEM]; servers: [--insecure]
  the cluster secret comes from --secret-file or SPILLWAY_SECRET (at least 32 characters); without one a
  server binds only to loopback unless --insecure. submit also reads the secret of a local cluster on this machine.`;

const OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  'heartbeat-timeout': { type: 'string' },
  'slot-timeout': { type: 'string' },
  'job-history': { type: 'string' },
  'history-bytes': { type: 'string' },
  'module-ttl': { type: 'string' },
  'data-dir': { type: 'string' },
  'module-load-timeout': { type: 'string' },
  'restart-strategy': { type: 'string' },
  'restart-attempts': { type: 'string' },
  'restart-delay': { type: 'string' },
  'max-module-size': { type: 'string' },
  'secret-file': { type: 'string' },
  insecure: { type: 'boolean', default: false },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-ca': { type: 'string' },
  'advertise-host': { type: 'string' },
  jobmanager: { type: 'string', default: 'http://127.0.0.1:8081' },
  slots: { type: 'string', default: '2' },
  memory: { type: 'string', default: '256mb' },
  'managed-memory': { type: 'string' },
  'buffer-size': { type: 'string', default: '32kb' },
  'spill-dir': { type: 'string' },
  'cancel-timeout': { type: 'string' },
  'task-heap': { type: 'string' },
  taskmanagers: { type: 'string', default: '2' },
  param: { type: 'string', multiple: true },
  parallelism: { type: 'string' },
  exchange: { type: 'string' },
  compression: { type: 'boolean', default: false },
  'compression-codec': { type: 'string' },
  'partition-type': { type: 'string', multiple: true },
  wait: { type: 'boolean', default: false },
  typecheck: { type: 'boolean', default: false },
  'log-level': { type: 'string' },
  'metrics-retention': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function positiveInt(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, not "${text}"`);
  return value;
}

function optionalInt(name: string, text: string | undefined): number | undefined {
  return text === undefined ? undefined : positiveInt(name, text);
}

function nonNegativeInt(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be an integer of 0 or more, not "${text}"`);
  return value;
}

/** The strategy the three --restart-* options name, or undefined when none is given. */
function restartOption(values: { 'restart-strategy'?: string; 'restart-attempts'?: string; 'restart-delay'?: string }): RestartStrategy | undefined {
  const name = values['restart-strategy'];
  const attempts = nonNegativeInt('restart-attempts', values['restart-attempts']);
  const delay = nonNegativeInt('restart-delay', values['restart-delay']);
  if (name === undefined && attempts === undefined && delay === undefined) return undefined;
  return defaultStrategy((name ?? 'fixed-delay') as RestartStrategyName, attempts, delay);
}

/** The --restart-* options again, checked, for a child process. */
function restartArgs(values: { 'restart-strategy'?: string; 'restart-attempts'?: string; 'restart-delay'?: string }): string[] {
  restartOption(values);
  return (['restart-strategy', 'restart-attempts', 'restart-delay'] as const).flatMap((name) => (values[name] === undefined ? [] : [`--${name}`, values[name]!]));
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [command, target] = positionals;
  if (values['log-level'] !== undefined) setLogLevel(values['log-level']);
  const metricsRetentionMs = optionalInt('metrics-retention', values['metrics-retention']);
  if (values.help || !command) {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  // Partition types are registered in every process that names or makes partitions, before it serves anything.
  const partitionTypes = (values['partition-type'] ?? []).map((file) => path.resolve(file));
  if (command === 'jobmanager' || command === 'taskmanager') await loadPartitionTypes(partitionTypes);
  const tls = loadTls({ cert: values['tls-cert'], key: values['tls-key'], ca: values['tls-ca'] });
  const secret = ClusterSecret.resolve({
    file: values['secret-file'],
    env: process.env,
    fallbackFile: command === 'submit' ? localClusterSecret(values.jobmanager) : undefined,
  });
  useClientCredentials({ token: secret?.token, tls });
  const security = { secret, tls, insecure: values.insecure };
  switch (command) {
    case 'jobmanager': {
      const jm = new JobManager({
        host: values.host,
        port: values.port === undefined ? 8081 : Number(values.port),
        heartbeatTimeoutMs: optionalInt('heartbeat-timeout', values['heartbeat-timeout']),
        slotTimeoutMs: optionalInt('slot-timeout', values['slot-timeout']),
        jobHistory: optionalInt('job-history', values['job-history']),
        historyBytes: values['history-bytes'] === undefined ? undefined : parseSize(values['history-bytes']),
        moduleTtlMs: optionalInt('module-ttl', values['module-ttl']),
        maxModuleBytes: values['max-module-size'] === undefined ? undefined : parseSize(values['max-module-size']),
        dataDir: values['data-dir'],
        metricsRetentionMs,
        restart: restartOption(values),
        moduleLoadTimeoutMs: optionalInt('module-load-timeout', values['module-load-timeout']),
        ...security,
      });
      const url = await jm.listen();
      console.log(`spillway jobmanager listening on ${url} with its data in ${jm.dataDir}`);
      onSignal(() => jm.close());
      return -1;
    }
    case 'taskmanager': {
      const tm = new TaskManager({
        jobManager: values.jobmanager,
        slots: positiveInt('slots', values.slots),
        memory: parseSize(values.memory),
        segmentSize: parseSize(values['buffer-size']),
        host: values.host,
        advertiseHost: values['advertise-host'],
        spillDir: values['spill-dir'] ?? path.join(os.tmpdir(), `spillway-tm-${process.pid}`),
        ownsSpillDir: values['spill-dir'] === undefined,
        cancelTimeoutMs: optionalInt('cancel-timeout', values['cancel-timeout']),
        taskHeapBytes: values['task-heap'] === undefined ? undefined : parseSize(values['task-heap']),
        metricsRetentionMs,
        managedMemory: values['managed-memory'] === undefined ? undefined : parseSize(values['managed-memory']),
        ...security,
        // A refused secret does not get better by retrying: it says why and exits 1.
        onUnauthorized: (error) => {
          console.error(`spillway: ${error.message}`);
          void tm.stop().finally(() => process.exit(1));
        },
      });
      // A TaskManager that cannot start (its registration refused) leaves no spill folder or thread behind.
      await tm.start().catch(async (error: unknown) => {
        await tm.stop().catch(() => {});
        throw error;
      });
      log.info({ taskManager: tm.taskManagerId, jobManager: values.jobmanager }, `taskmanager registered with ${values.jobmanager}`);
      onSignal(() => tm.stop());
      return -1;
    }
    case 'local': {
      const cluster = new LocalCluster({
        ...(secret === null ? {} : { secret }),
        taskManagers: positiveInt('taskmanagers', values.taskmanagers),
        slots: positiveInt('slots', values.slots),
        memory: values.memory,
        bufferSize: values['buffer-size'],
        port: values.port === undefined ? 8081 : Number(values.port),
        jobManagerArgs: restartArgs(values),
        // The TaskManagers' task settings, checked here so that a bad value fails before anything starts.
        extraArgs: [
          ...tlsArgs(values['tls-cert'], values['tls-key'], values['tls-ca']),
          ...(values['cancel-timeout'] === undefined ? [] : ['--cancel-timeout', String(positiveInt('cancel-timeout', values['cancel-timeout']))]),
          ...(values['task-heap'] === undefined ? [] : ['--task-heap', String(parseSize(values['task-heap']))]),
          ...(values['log-level'] === undefined ? [] : ['--log-level', values['log-level']]),
          ...(metricsRetentionMs === undefined ? [] : ['--metrics-retention', String(metricsRetentionMs)]),
          ...(values['managed-memory'] === undefined ? [] : ['--managed-memory', String(parseSize(values['managed-memory']))]),
          ...partitionTypes.flatMap((file) => ['--partition-type', file]),
        ],
      });
      onSignal(() => cluster.stop());
      const url = await cluster.start();
      console.log(`spillway local cluster: jobmanager ${url}, ${values.taskmanagers} taskmanagers; Ctrl-C stops it`);
      const secretFile = localSecretFile(Number(new URL(url).port));
      console.log(`cluster secret in ${secretFile} (mode 0600): spillway submit on this machine finds it; curl -H "Authorization: Bearer $(cat ${secretFile})"`);
      return -1;
    }
    case 'submit': {
      if (!target) throw new Error('submit needs a job name or a module file');
      return submit({
        target,
        jobManager: values.jobmanager,
        params: values.param ?? [],
        parallelism: values.parallelism === undefined ? undefined : positiveInt('parallelism', values.parallelism),
        exchange: values.exchange,
        compression: values['compression-codec'] ?? values.compression,
        wait: values.wait,
        typecheck: values.typecheck,
        restart: restartOption(values),
      });
    }
    default:
      throw new Error(`unknown command "${command}"\n${USAGE}`);
  }
}

/** The secret file of a local cluster at this JobManager URL, if it is on this machine. */
function localClusterSecret(jobManager: string): string | undefined {
  const url = new URL(jobManager);
  if (!isLoopback(url.hostname)) return undefined;
  return localSecretFile(Number(url.port || (url.protocol === 'https:' ? 443 : 80)));
}

function tlsArgs(cert: string | undefined, key: string | undefined, ca: string | undefined): string[] {
  return cert === undefined || key === undefined || ca === undefined
    ? []
    : ['--tls-cert', path.resolve(cert), '--tls-key', path.resolve(key), '--tls-ca', path.resolve(ca)];
}

/** Stops cleanly on SIGINT/SIGTERM, then exits. */
function onSignal(stop: () => Promise<void>): void {
  const handler = (): void => {
    stop().then(
      () => process.exit(0),
      (error: Error) => {
        console.error(`spillway: stopping failed: ${error.message}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: Error) => {
    console.error(`spillway: ${error.message}`);
    process.exit(1);
  },
);

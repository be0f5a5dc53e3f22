import path from 'node:path';
import { DEFAULT_JOBMANAGER_PORT } from '../../ServerOptions.js';
import { defineCommand, SERVING } from '../Command.js';
import { LocalCluster, localSecretFile } from '../LocalCluster.js';
import { DEFAULT_TASKMANAGERS } from '../LocalClusterOptions.js';
import type { OptionTable } from '../OptionTable.js';
import { stopOnSignal } from '../StopOnSignal.js';
import { COMMON_OPTIONS, partitionTypeFiles, RESTART_OPTIONS, restartArgs, TASK_OPTIONS, tlsArgs, useCommonOptions } from './CommonOptions.js';
import { PORT } from './JobManagerCommand.js';

export const LOCAL_OPTIONS = {
  taskmanagers: { type: 'int', default: DEFAULT_TASKMANAGERS, help: 'TaskManager processes' },
  port: { ...PORT, default: DEFAULT_JOBMANAGER_PORT, help: "the JobManager's REST port; 0 for any free one" },
  jobmanagers: { type: 'int', min: 1, default: 1, help: 'JobManager processes: one leads, the others stand by (more than one needs --ha)' },
  ha: { type: 'string', placeholder: 'postgres://USER@HOST:PORT/DB', help: 'high availability: the JobManagers elect their leader and keep the jobs, checkpoints and results here' },
  ...TASK_OPTIONS,
  ...RESTART_OPTIONS,
  ...COMMON_OPTIONS,
} as const satisfies OptionTable;

export const localCommand = defineCommand({
  name: 'local',
  summary: 'A JobManager and N TaskManager child processes on this machine, real TCP between them, one cluster secret.',
  options: LOCAL_OPTIONS,
  async run(values) {
    const { secret } = useCommonOptions(values);
    const cluster = new LocalCluster({
      ...(secret === null ? {} : { secret }),
      taskManagers: values.taskmanagers,
      slots: values.slots,
      memory: String(values.memory),
      managedMemory: String(values['managed-memory']),
      bufferSize: String(values['buffer-size']),
      port: values.port,
      jobManagers: values.jobmanagers,
      ha: values.ha === undefined ? undefined : { url: values.ha },
      jobManagerArgs: restartArgs(values),
      // Each process takes the ones its command has.
      extraArgs: [
        ...tlsArgs(values),
        '--cancel-timeout', String(values['cancel-timeout']),
        ...(values['task-heap'] === undefined ? [] : ['--task-heap', String(values['task-heap'])]),
        ...(values['log-level'] === undefined ? [] : ['--log-level', values['log-level']]),
        '--metrics-retention', String(values['metrics-retention']),
        ...(values['checkpoint-dir'] === undefined ? [] : ['--checkpoint-dir', path.resolve(values['checkpoint-dir'])]),
        ...partitionTypeFiles(values).flatMap((file) => ['--partition-type', file]),
      ],
    });
    stopOnSignal(() => cluster.stop());
    const url = await cluster.start();
    const jobManagers = cluster.jobManagerUrls.length > 0 ? `jobmanagers ${cluster.jobManagerUrls.join(',')} (cluster ${cluster.clusterId})` : `jobmanager ${url}`;
    console.log(`spillway local cluster: ${jobManagers}, ${values.taskmanagers} taskmanagers; Ctrl-C stops it`);
    const secretFile = localSecretFile(Number(new URL(url).port));
    console.log(`cluster secret in ${secretFile} (mode 0600): spillway submit on this machine finds it; curl -H "Authorization: Bearer $(cat ${secretFile})"`);
    return SERVING;
  },
});

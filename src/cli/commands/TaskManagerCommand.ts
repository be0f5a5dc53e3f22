import os from 'node:os';
import path from 'node:path';
import { log } from '../../Logger.js';
import { loadPartitionTypes } from '../../network/networkThread/partition/PartitionTypes.js';
import { DEFAULT_HOST, DEFAULT_JOBMANAGER_URL } from '../../ServerOptions.js';
import { TaskManager } from '../../taskmanager/TaskManager.js';
import { defineCommand, SERVING } from '../Command.js';
import { printFailure } from '../Failure.js';
import type { OptionTable } from '../OptionTable.js';
import { stopOnSignal } from '../StopOnSignal.js';
import { COMMON_OPTIONS, INSECURE_OPTION, partitionTypeFiles, TASK_OPTIONS, useCommonOptions } from './CommonOptions.js';

export const TASKMANAGER_OPTIONS = {
  jobmanager: { type: 'urls', default: DEFAULT_JOBMANAGER_URL, help: 'the JobManager to register with' },
  ...TASK_OPTIONS,
  'spill-dir': { type: 'string', placeholder: 'DIR', help: 'its partitions, spill files and job modules (default: a temp folder, removed on stop)' },
  host: { type: 'string', placeholder: 'HOST', default: DEFAULT_HOST, help: 'the interface its REST API and data port bind' },
  'advertise-host': { type: 'string', placeholder: 'HOST', help: 'the host the JobManager and peers reach it at (--host if absent; required when --host is a wildcard)' },
  ...INSECURE_OPTION,
  ...COMMON_OPTIONS,
} as const satisfies OptionTable;

export const taskManagerCommand = defineCommand({
  name: 'taskmanager',
  summary: 'A TaskManager: registers with the JobManager, heartbeats, and runs each task in a thread of its own.',
  options: TASKMANAGER_OPTIONS,
  async run(values) {
    const { secret, tls } = useCommonOptions(values);
    await loadPartitionTypes(partitionTypeFiles(values));
    const tm = new TaskManager({
      jobManager: values.jobmanager,
      slots: values.slots,
      memory: values.memory,
      segmentSize: values['buffer-size'],
      host: values.host,
      advertiseHost: values['advertise-host'],
      spillDir: values['spill-dir'] ?? path.join(os.tmpdir(), `spillway-tm-${process.pid}`),
      ownsSpillDir: values['spill-dir'] === undefined,
      checkpointDir: values['checkpoint-dir'] === undefined ? undefined : path.resolve(values['checkpoint-dir']),
      cancelTimeoutMs: values['cancel-timeout'],
      taskHeapBytes: values['task-heap'],
      metricsRetentionMs: values['metrics-retention'],
      managedMemory: values['managed-memory'],
      secret,
      tls,
      insecure: values.insecure,
      // A refused secret does not get better by retrying: it says why and exits 1.
      onUnauthorized: (error) => {
        printFailure(error);
        void tm.stop().finally(() => process.exit(1));
      },
    });
    // A TaskManager that cannot start (its registration refused) leaves no spill folder or thread behind.
    await tm.start().catch(async (error: unknown) => {
      await tm.stop().catch(() => {});
      throw error;
    });
    log.info({ taskManager: tm.taskManagerId, jobManager: values.jobmanager }, `taskmanager registered with ${values.jobmanager}`);
    stopOnSignal(() => tm.stop());
    return SERVING;
  },
});

import path from 'node:path';
import { SpillwayError } from '../../errors/Errors.js';
import { DEFAULT_CHECKPOINT_TIMEOUT_MS, DEFAULT_RETAINED_CHECKPOINTS, DEFAULT_TOLERABLE_FAILURES } from '../../jobmanager/checkpoint/CheckpointOptions.js';
import { isLoopback } from '../../security/ClusterSecret.js';
import { DEFAULT_JOBMANAGER_URL } from '../../ServerOptions.js';
import { defineCommand } from '../Command.js';
import { localSecretFile } from '../LocalCluster.js';
import type { OptionTable, OptionValues } from '../OptionTable.js';
import { submit, type SubmitOptions } from '../Submit.js';
import { COMMON_OPTIONS, RESTART_OPTIONS, restartOf, useCommonOptions } from './CommonOptions.js';

export const SUBMIT_OPTIONS = {
  jobmanager: { type: 'urls', default: DEFAULT_JOBMANAGER_URL, help: 'the JobManager to submit to' },
  param: { type: 'string', multiple: true, placeholder: 'k=v', help: 'a job parameter' },
  parallelism: { type: 'int', help: "the job's parallelism (the job's own or the JobManager's if absent)" },
  exchange: { type: 'string', placeholder: 'pipelined|blocking|sort-merge|hybrid|TYPE', help: "the partition type of the job's exchanges" },
  compression: { type: 'boolean', help: "compress the buffers of the job's edges, with the default codec" },
  'compression-codec': { type: 'string', placeholder: 'snappy|brotli', help: "compress the buffers of the job's edges with this codec" },
  wait: { type: 'boolean', help: 'follow the job to its end: progress, final state and throughput, and a failed job\'s coded error (exit 1 unless FINISHED)' },
  follow: { type: 'boolean', help: "print the job's collected records as they come, a JSON line each (a streaming job's as it runs), until it ends; then its state on stderr (exit 1 unless FINISHED)" },
  typecheck: { type: 'boolean', help: 'type-check a TypeScript job (with the tsconfig.json above it) before uploading it; refuse it on a type error' },
  'checkpoint-interval': { type: 'duration-ms', min: 10, help: 'take a checkpoint this often (none without)' },
  'checkpoint-mode': { type: ['aligned', 'unaligned'], help: 'how barriers pass a task of several inputs (aligned)' },
  'alignment-timeout': { type: 'duration-ms', min: 0, help: 'an aligned checkpoint waiting longer at a task goes unaligned there' },
  'checkpoint-timeout': { type: 'duration-ms', min: 1, help: `a checkpoint taking longer is aborted (${DEFAULT_CHECKPOINT_TIMEOUT_MS})` },
  'checkpoint-retain': { type: 'int', min: 1, help: `completed checkpoints kept (${DEFAULT_RETAINED_CHECKPOINTS})` },
  'tolerable-checkpoint-failures': { type: 'int', min: 0, help: `checkpoints in a row that may fail before the job fails (${DEFAULT_TOLERABLE_FAILURES})` },
  'checkpoint-dir': { type: 'string', placeholder: 'DIR', help: "this job's checkpoint folder, instead of the JobManager's --checkpoint-dir" },
  'from-savepoint': { type: 'string', placeholder: 'PATH', help: 'start from this savepoint (or retained checkpoint) folder' },
  'allow-non-restored-state': { type: 'boolean', help: "start from a savepoint of another topology: the state of stages that changed is dropped" },
  ...RESTART_OPTIONS,
  ...COMMON_OPTIONS,
} as const satisfies OptionTable;

export const submitCommand = defineCommand({
  name: 'submit',
  summary:
    'Submits a built-in job by name, or uploads a job module (.mjs/.js as it is; .ts/.mts with its types stripped) and submits it; prints `submitted <job id>` first.',
  options: SUBMIT_OPTIONS,
  positionals: [{ name: 'JOB_NAME|FILE', required: true }],
  async run(values, [target]) {
    useCommonOptions(values, localClusterSecret(values.jobmanager));
    return submit({
      target,
      jobManager: values.jobmanager,
      params: values.param,
      parallelism: values.parallelism,
      exchange: values.exchange,
      compression: values['compression-codec'] ?? values.compression,
      wait: values.wait,
      follow: values.follow,
      checkpoints: checkpointsOf(values),
      savepoint: values['from-savepoint'] === undefined ? undefined : path.resolve(values['from-savepoint']),
      allowNonRestoredState: values['allow-non-restored-state'],
      typecheck: values.typecheck,
      restart: restartOf(values),
    });
  },
});

/** The job's checkpoints as the --checkpoint-* options ask (POST /jobs `checkpoints`), or none without an interval. */
function checkpointsOf(values: OptionValues<typeof SUBMIT_OPTIONS>): SubmitOptions['checkpoints'] {
  const interval = values['checkpoint-interval'];
  if (interval === undefined) {
    const stray = (['checkpoint-mode', 'alignment-timeout', 'checkpoint-timeout', 'checkpoint-retain', 'tolerable-checkpoint-failures', 'checkpoint-dir'] as const).find((o) => values[o] !== undefined);
    if (stray !== undefined) throw new SpillwayError('SPW_ERR_USAGE', `--${stray} applies to checkpoints: give --checkpoint-interval too`);
    return undefined;
  }
  return {
    interval,
    mode: values['checkpoint-mode'],
    alignmentTimeout: values['alignment-timeout'],
    timeout: values['checkpoint-timeout'],
    retain: values['checkpoint-retain'],
    tolerableFailures: values['tolerable-checkpoint-failures'],
    directory: values['checkpoint-dir'] === undefined ? undefined : path.resolve(values['checkpoint-dir']),
  };
}

/** The secret file of a local cluster at this JobManager URL, if it is on this machine. */
export function localClusterSecret(jobManager: string): string | undefined {
  // Of several JobManagers (HA), the first names the machine.
  const url = new URL(jobManager.split(',')[0]);
  if (!isLoopback(url.hostname)) return undefined;
  return localSecretFile(Number(url.port || (url.protocol === 'https:' ? 443 : 80)));
}

import path from 'node:path';
import { codeOf, SpillwayError } from '../../errors/Errors.js';
import type { SavepointStatus } from '../../rest/RestApi.js';
import { RestClient } from '../../rest/RestClient.js';
import { DEFAULT_JOBMANAGER_URL } from '../../ServerOptions.js';
import { jobManagerUrls, leaderUrl } from '../../ha/LeaderFinder.js';
import { defineCommand, type Command } from '../Command.js';
import type { OptionTable } from '../OptionTable.js';
import { COMMON_OPTIONS, useCommonOptions } from './CommonOptions.js';
import { localClusterSecret } from './SubmitCommand.js';

export const SAVEPOINT_OPTIONS = {
  jobmanager: { type: 'urls', default: DEFAULT_JOBMANAGER_URL, help: 'the JobManager of the job' },
  timeout: { type: 'duration-ms', default: 120_000, help: 'how long to wait for the savepoint to complete' },
  ...COMMON_OPTIONS,
} as const satisfies OptionTable;

/** How often the savepoint's status is asked for, ms. */
const POLL_MS = 200;

/**
 * `spillway savepoint JOB DIR` and `spillway stop JOB DIR`: a savepoint of a running job
 * into DIR (POST /jobs/JOB/savepoints, or /stop, which then stops the job), waited for;
 * prints its path. Exit 1 with the coded error if it fails.
 */
function savepointCommandNamed(name: 'savepoint' | 'stop', summary: string): Command {
  return defineCommand({
    name,
    summary,
    options: SAVEPOINT_OPTIONS,
    positionals: [
      { name: 'JOB', required: true },
      { name: 'DIR', required: true },
    ],
    async run(values, [job, dir]) {
      useCommonOptions(values, localClusterSecret(values.jobmanager));
      let jm = new RestClient(await leaderUrl(values.jobmanager));
      const { id } = await jm.savepoint(job, path.resolve(dir), name === 'stop');
      const deadline = Date.now() + values.timeout;
      for (;;) {
        const status: SavepointStatus = await jm.savepointStatus(job, id).catch(async (error: unknown): Promise<SavepointStatus> => {
          // The leader may be gone (HA): the new one says what became of the savepoint.
          if (codeOf(error) !== 'SPW_ERR_CONTROL_CALL' || jobManagerUrls(values.jobmanager).length === 1) throw error;
          jm = new RestClient(await leaderUrl(values.jobmanager));
          return { id, status: 'IN_PROGRESS' };
        });
        if (status.status === 'COMPLETED') {
          console.log(`savepoint ${id} of ${job} at ${status.path}`);
          return 0;
        }
        if (status.status === 'FAILED') throw new SpillwayError(status.code === 'SPW_ERR_LEADER_CHANGED' ? 'SPW_ERR_LEADER_CHANGED' : 'SPW_ERR_CHECKPOINT_DECLINED', `savepoint ${id} of ${job} failed: ${status.failure ?? 'no reason given'}`);
        if (Date.now() > deadline) throw new SpillwayError('SPW_ERR_CONTROL_CALL', `savepoint ${id} of ${job} did not complete within ${values.timeout} ms`);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    },
  });
}

export const savepointCommand = savepointCommandNamed('savepoint', 'Takes a savepoint of a running job into DIR and prints its path; the job goes on.');
export const stopCommand = savepointCommandNamed('stop', 'Takes a savepoint of a running job into DIR and stops the job there: it FINISHES with everything read before it committed.');

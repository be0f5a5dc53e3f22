import fs from 'node:fs';
import path from 'node:path';
import { SpillwayError } from '../../errors/Errors.js';
import { leaderUrl } from '../../ha/LeaderFinder.js';
import { RestClient } from '../../rest/RestClient.js';
import { DEFAULT_JOBMANAGER_URL } from '../../ServerOptions.js';
import { DEFAULT_SLOTS } from '../../taskmanager/TaskManagerOptions.js';
import { defineCommand } from '../Command.js';
import { LocalCluster } from '../LocalCluster.js';
import { DEFAULT_TASKMANAGERS } from '../LocalClusterOptions.js';
import type { OptionTable } from '../OptionTable.js';
import { runSql, type SqlFormat } from '../Sql.js';
import { COMMON_OPTIONS, useCommonOptions } from './CommonOptions.js';
import { localClusterSecret } from './SubmitCommand.js';

export const SQL_OPTIONS = {
  jobmanager: { type: 'urls', help: `the JobManager to run the statements on, or several (the leader is found among them) (${DEFAULT_JOBMANAGER_URL}; an embedded local cluster when nothing answers there)` },
  local: { type: 'boolean', help: 'run the statements on an embedded local cluster, started and stopped by the command' },
  wait: { type: 'boolean', help: "wait for every job the statements submitted (exit 1 if one did not FINISH, printing its coded error)" },
  follow: { type: 'boolean', help: "print an unbounded SELECT's changes as they come, a JSON line each" },
  format: { type: ['table', 'json', 'csv'], default: 'table', help: "how a SELECT's rows are printed" },
  ...COMMON_OPTIONS,
} as const satisfies OptionTable;

export const sqlCommand = defineCommand({
  name: 'sql',
  summary: 'Runs the Flink SQL statements of a file (or - for standard input) in order: DDL, SET, SHOW, DESCRIBE, EXPLAIN; each INSERT INTO a job (`submitted <job id>`); a SELECT prints its rows.',
  options: SQL_OPTIONS,
  positionals: [{ name: 'FILE|-', required: false }],
  async run(values, [file]) {
    const statements = file === undefined || file === '-' ? fs.readFileSync(0, 'utf8') : readFile(file);
    const baseDir = file === undefined || file === '-' ? process.cwd() : path.dirname(path.resolve(file));
    const given = values.jobmanager;
    const jobManager = given ?? DEFAULT_JOBMANAGER_URL;
    useCommonOptions(values, localClusterSecret(jobManager));
    const options = { statements, wait: values.wait, follow: values.follow, format: values.format as SqlFormat, baseDir };
    if (!values.local && (given !== undefined || (await answers(jobManager)))) return runSql({ ...options, jobManager: await leaderUrl(jobManager) });
    const cluster = new LocalCluster({ taskManagers: DEFAULT_TASKMANAGERS, slots: DEFAULT_SLOTS, stdio: 'ignore' });
    try {
      const url = await cluster.start();
      return await runSql({ ...options, jobManager: url, wait: true });
    } finally {
      await cluster.stop();
    }
  },
});

function readFile(file: string): string {
  if (!fs.existsSync(file)) throw new SpillwayError('SPW_ERR_USAGE', `no file ${file}`);
  return fs.readFileSync(file, 'utf8');
}

/** Whether a JobManager answers at `url`. */
async function answers(url: string): Promise<boolean> {
  try {
    await new RestClient(url).healthz({ timeoutMs: 2000 });
    return true;
  } catch {
    return false;
  }
}

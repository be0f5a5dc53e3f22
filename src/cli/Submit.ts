import fs from 'node:fs';
import path from 'node:path';
import { isErrorCode, SpillwayError } from '../errors/Errors.js';
import { JobState } from '../lifecycle/JobState.js';
import { leaderUrl } from '../ha/LeaderFinder.js';
import type { RestartStrategy } from '../jobmanager/failover/RestartStrategy.js';
import type { JobDetails } from '../jobmanager/jobs/JobViews.js';
import type { SubmitBody } from '../jobmanager/submission/SubmitBody.js';
import { RestClient } from '../rest/RestClient.js';
import { jobSummary } from './JobSummary.js';
import { isTypeScript, transpileJob, typecheckJob } from './TypeScriptJob.js';

export interface SubmitOptions {
  target: string;
  jobManager: string;
  params: string[];
  parallelism?: number;
  exchange?: string;
  /** Compress the buffers of the job's edges (where their type allows it): true for the default codec, or a codec's name. */
  compression?: boolean | string;
  wait: boolean;
  /** Print the job's collected records as they come (newline-delimited JSON), then its end as --wait does. */
  follow?: boolean;
  /** Type-check a TypeScript job before uploading it, and refuse it on a type error. */
  typecheck?: boolean;
  /** This job's restart strategy, instead of the JobManager's default. */
  restart?: RestartStrategy;
  /** Its checkpoints (POST /jobs `checkpoints`), with what is not given left to the defaults. */
  checkpoints?: { interval: number; mode?: 'aligned' | 'unaligned'; alignmentTimeout?: number; timeout?: number; retain?: number; tolerableFailures?: number; directory?: string };
  /** A savepoint folder to start from. */
  savepoint?: string;
  allowNonRestoredState?: boolean;
}

/** A target that reads as a file's path, not a built-in job's name: it holds a folder separator or ends as a module does. */
const PATH_LIKE = /[/\\]|\.(ts|mts|js|mjs)$/;

/**
 * `spillway submit`: a built-in job by name, or a module file uploaded first (a
 * TypeScript one as JavaScript, its types stripped); with --wait, follows it to the end.
 * A path that names no file fails before any call, as no built-in job has such a name.
 */
export async function submit(options: SubmitOptions): Promise<number> {
  const isFile = fs.existsSync(options.target) && fs.statSync(options.target).isFile();
  if (!isFile && PATH_LIKE.test(options.target)) {
    throw new SpillwayError('SPW_ERR_USAGE', `no job file ${options.target}: ${path.resolve(options.target)} does not exist (a built-in job's name has no / and no .ts, .js or .mjs ending)`);
  }
  const jm = new RestClient(await leaderUrl(options.jobManager));
  const body: SubmitBody = { params: parseParams(options.params) };
  if (options.parallelism !== undefined) body.parallelism = options.parallelism;
  if (options.exchange !== undefined) body.exchange = options.exchange;
  if (options.compression) body.compression = options.compression;
  if (options.restart !== undefined) body.restart = options.restart;
  // Options not given are undefined, which JSON leaves out: the defaults hold.
  if (options.checkpoints !== undefined) body.checkpoints = options.checkpoints;
  if (options.savepoint !== undefined) body.savepoint = options.savepoint;
  if (options.allowNonRestoredState) body.allowNonRestoredState = true;
  if (isFile) {
    const source = await moduleSource(options.target, options.typecheck ?? false);
    body.module = await jm.uploadModule(source);
    body.name = path.basename(options.target).replace(/\.[cm]?[jt]s$/, '');
  } else {
    body.job = options.target;
  }
  const id = await jm.submit(body);
  console.log(`submitted ${id}`);
  if (options.follow) return followRecords(jm, id);
  if (!options.wait) return 0;
  const status = await follow(jm, id);
  console.log(jobSummary(id, status));
  if (status.error) console.log(`error: ${describeError(status)}`);
  if (status.state === JobState.FINISHED) console.log(`result: ${jm.resultUrl(id)}`);
  return status.state === JobState.FINISHED ? 0 : 1;
}

/**
 * --follow: the job's collected records on stdout, a JSON line each, as they come, until
 * the job ends; then its final state on stderr (with a failed job's coded error), and
 * exit 0 only if it FINISHED.
 */
async function followRecords(jm: RestClient, id: string): Promise<number> {
  await jm.followResult(id, (record) => process.stdout.write(`${JSON.stringify(record)}\n`));
  const status = await jm.job(id);
  console.error(`${id} ${status.state}${status.error ? `: ${describeError(status)}` : ''}`);
  return status.state === JobState.FINISHED ? 0 : 1;
}

/** The JavaScript to upload for a job file: as it is, or stripped of its types (checked first with `typecheck`). */
async function moduleSource(file: string, typecheck: boolean): Promise<string> {
  const source = fs.readFileSync(file, 'utf8');
  if (!isTypeScript(file)) {
    if (typecheck) throw new SpillwayError('SPW_ERR_USAGE', `--typecheck checks TypeScript jobs (.ts, .mts), not ${file}`);
    return source;
  }
  if (typecheck) await typecheckJob(file);
  return transpileJob(file, source);
}

/** A failed job's error as `CODE: message`, as the command line prints every error. */
function describeError(status: JobDetails): string {
  return isErrorCode(status.errorCode) ? `${status.errorCode}: ${status.error}` : `${status.error}`;
}

async function follow(jm: RestClient, id: string): Promise<JobDetails> {
  const tty = process.stdout.isTTY;
  for (;;) {
    const status = await jm.job(id);
    if (tty) process.stdout.write(`\r${progressBar(status.progress)} ${status.state} ${status.counters.recordsIn} records `);
    if (JobState.isTerminal(status.state)) {
      if (tty) process.stdout.write('\n');
      return status;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

function progressBar(fraction: number, width = 30): string {
  const done = Math.round(fraction * width);
  return `[${'#'.repeat(done)}${'-'.repeat(width - done)}] ${Math.round(fraction * 100)}%`;
}

/** k=v pairs, values as strings (as Flink's ParameterTool gives them): a job converts what it needs. */
export function parseParams(pairs: string[]): Record<string, string> {
  const params: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new SpillwayError('SPW_ERR_USAGE', `--param wants k=v, not "${pair}"`);
    params[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return params;
}

import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { HttpError } from '../../src/rpc/HttpClient.js';
import type { SubmitBody } from '../../src/jobmanager/submission/SubmitBody.js';
import { RestClient } from '../../src/rest/RestClient.js';
import { TaskManagerGateway } from '../../src/rpc/TaskManagerGateway.js';
import { forEachWord } from '../../src/job/Tokenizer.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import type { TaskManagerStatus } from '../../src/rpc/ControlPlane.js';
import { eventually } from './eventually.js';

/** A task of GET /jobs/:id, as far as most tests read it. */
export interface TaskSummary {
  taskManager: string;
  state: string;
}

/** GET /jobs/:id, as far as tests read it; `Task` is what a test reads of each task. */
export interface JobStatus<Task = TaskSummary> {
  id: string;
  state: JobState;
  error?: string;
  errorCode?: string;
  tasks: Task[];
}

/** POST /jobs; the job's id. `body` as the test wants it: tests send bodies the schema refuses, too. */
export function submitJob(url: string, body: Record<string, unknown>): Promise<string> {
  return new RestClient(url).submit(body as SubmitBody);
}

/** Uploads a job module; its hash, to submit it by. */
export function uploadModule(url: string, source: string): Promise<string> {
  return new RestClient(url).uploadModule(source);
}

/** GET /jobs/:id. */
export function jobStatus(url: string, id: string): Promise<JobStatus> {
  return new RestClient(url).job(id);
}

/** Polls a job until it ended; throws after `timeoutMs`. */
export async function waitFor(url: string, id: string, timeoutMs = 120_000): Promise<JobStatus> {
  let last: JobStatus | undefined;
  return eventually(
    () => `job ${id} ended (still ${last?.state})`,
    async () => {
      last = await jobStatus(url, id);
      return JobState.isTerminal(last.state) && last;
    },
    timeoutMs,
  );
}

/** Cancels the jobs in `ids` and waits for each to end (whatever happened to the test that started them), then forgets them: no job holds the next test's slots. */
export async function cancelAll(url: string, ids: Set<string>): Promise<void> {
  for (const id of ids) await new RestClient(url).cancel(id).catch(() => undefined);
  for (const id of ids) await waitFor(url, id, 15_000).catch(() => undefined);
  ids.clear();
}

/** Polls a job until it is RUNNING. */
export async function waitRunning(url: string, id: string, timeoutMs = 30_000): Promise<void> {
  await eventually(`job ${id} RUNNING`, async () => (await jobStatus(url, id)).state === JobState.RUNNING, timeoutMs);
}

export async function expectFinished(url: string, id: string): Promise<JobStatus> {
  const status = await waitFor(url, id);
  expect(status.state, status.error).toBe(JobState.FINISHED);
  return status;
}

export function result<T>(url: string, id: string): Promise<T[]> {
  return new RestClient(url).result<T>(id);
}

/** The HttpError a call fails with (the test fails if it succeeds). */
export async function failure(call: Promise<unknown>): Promise<HttpError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpError);
  return error as HttpError;
}

/** Word counts of every file in `dir`, with the tokenizer the built-in word count uses. */
export function referenceCount(dir: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const file of fs.readdirSync(dir).sort()) {
    forEachWord(fs.readFileSync(path.join(dir, file), 'utf8'), (w) => counts.set(w, (counts.get(w) ?? 0) + 1));
  }
  return counts;
}

/** Every word once, with its expected count. */
export function expectCounts(records: [string, number][], expected: ReadonlyMap<string, number>): void {
  const got = new Map<string, number>();
  for (const [word, count] of records) {
    expect(got.has(word), `word ${word} reported twice`).toBe(false);
    got.set(word, count);
  }
  expect(got.size).toBe(expected.size);
  for (const [word, count] of expected) expect(got.get(word), word).toBe(count);
}

export interface TaskManagerEntry {
  id: string;
  host: string;
  httpPort: number;
  dataPort: number;
}

/** The TaskManagers registered now. */
export function taskManagers(url: string): Promise<TaskManagerEntry[]> {
  return new RestClient(url).taskManagers();
}

/** Waits until `count` TaskManagers are registered. */
export async function waitForTaskManagers(url: string, count: number, timeoutMs = 30_000): Promise<TaskManagerEntry[]> {
  let registered: TaskManagerEntry[] = [];
  return eventually(
    () => `${count} taskmanagers registered (${registered.length} are)`,
    async () => {
      registered = await taskManagers(url).catch(() => []);
      return registered.length >= count && registered;
    },
    { timeoutMs, everyMs: 50 },
  );
}

/** Every TaskManager comes to hold no partition, no spill file and no buffer (a release is asynchronous: polled). */
export async function expectTaskManagersIdle(url: string): Promise<void> {
  for (const tm of await taskManagers(url)) {
    let status: TaskManagerStatus | undefined;
    const idle = (s: TaskManagerStatus): boolean => s.partitions.length === 0 && s.segmentsInUse === 0 && s.spillFiles.length === 0;
    await eventually(
      () => `taskmanager ${tm.id} idle (${JSON.stringify(status)})`,
      async () => idle((status = await new TaskManagerGateway(tm).status())),
      { timeoutMs: 30_000, everyMs: 100 },
    ).catch(() => undefined);
    // The assertions say what is left, where the poll would only say it timed out.
    expect(status?.partitions).toEqual([]);
    expect(status?.spillFiles).toEqual([]);
    expect(status?.segmentsInUse).toBe(0);
  }
}

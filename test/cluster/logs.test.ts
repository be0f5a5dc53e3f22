import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { expectFinished, submitJob } from '../helpers/jobs.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/spillway.js');

interface LogLine {
  level: number;
  time: number;
  pid: number;
  msg: string;
  job?: string;
  task?: string;
  partition?: string;
  peer?: string;
  taskManager?: string;
}

let cluster: LocalCluster;
let url: string;
const lines: string[] = [];

const test = clusterTest({ taskManagers: 2, slots: 1, memory: '64mb', stdio: 'pipe', extraArgs: ['--log-level', 'debug'] });

test.beforeAll(async ({ cluster: started }) => {
  cluster = started;
  url = cluster.url;
  for (const child of cluster.processes) {
    let rest = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      lines.push(...parts.filter(Boolean));
    });
  }
}, 60_000);


/**
 * What `command` writes on a terminal (script(1) gives it one), up to its first line that holds
 * `text`: then the process that wrote it (the pid in the line) is stopped with SIGTERM, and
 * timeout(1) stops it if it never writes one (a loaded machine may take seconds to start it).
 */
async function terminalLine(command: string, text: string): Promise<{ line?: string; stdout: string }> {
  const child = spawn('script', ['-qec', `timeout 30 ${command}`, '/dev/null'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let stdout = '';
  let line: string | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (line !== undefined) return;
    line = stdout.split(/\r?\n/).find((l) => l.includes(text));
    const pid = line === undefined ? null : /\((\d+)\)/.exec(line);
    // Once only: later chunks arrive after the process is gone, and a second kill is ESRCH.
    if (pid) killIfAlive(Number(pid[1]));
  });
  await new Promise((resolve) => child.once('close', resolve));
  return { line, stdout };
}

function killIfAlive(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

describe('logs', () => {
  test('every process writes JSON lines on stderr; job, task, partition and connection events carry their ids', async () => {
    const id = await submitJob(url, { job: 'synthetic', params: { records: 20_000, recordSize: 20, keys: 100 }, parallelism: 2 });
    const status = await expectFinished(url, id);
    // The TaskManagers' lines of the tasks' ends may come after the JobManager's of the job's.
    await eventually('a task ended line of every task', () => lines.filter((line) => line.includes('"task ended"')).length >= status.tasks.length);
    const parsed = lines.map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
    });
    for (const line of parsed) {
      expect(typeof line.level).toBe('number');
      expect(typeof line.time).toBe('number');
      expect(typeof line.msg).toBe('string');
    }
    const of = (msg: string): LogLine[] => parsed.filter((line) => line.msg === msg);
    expect(of('job submitted').map((l) => l.job)).toEqual([id]);
    expect(of('job finished').map((l) => l.job)).toEqual([id]);
    const taskIds = status.tasks.map((t) => (t as unknown as { id: string }).id).sort();
    expect(of('task running').map((l) => l.task).sort()).toEqual(taskIds);
    expect(of('task ended').every((l) => l.job === id && l.taskManager !== undefined)).toBe(true);
    expect(of('partition ready').length, 'each producer announces its partition').toBeGreaterThan(0);
    for (const line of of('partition ready')) expect(line.partition).toMatch(new RegExp(`^${id}/`));
    const connections = of('data connection opened');
    expect(connections.length, 'two TaskManagers connect to each other').toBeGreaterThan(0);
    for (const line of connections) expect(line.peer).toMatch(/:\d+$/);
    expect(new Set(parsed.map((l) => l.pid)).size, 'the JobManager and both TaskManagers log').toBe(3);
  }, 60_000);

  test('on a terminal the lines are readable, not JSON', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-logs-'));
    try {
      const { line, stdout } = await terminalLine(`${process.execPath} ${BIN} jobmanager --port 0 --data-dir ${dataDir}`, 'Server listening');
      expect(line, stdout).toBeDefined();
      expect(line).toMatch(/INFO/);
      expect(() => JSON.parse(line!)).toThrow();
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('an unknown --log-level is refused with the levels there are', async () => {
    const failure = await run(process.execPath, [BIN, 'jobmanager', '--log-level', 'loud', '--port', '0']).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('--log-level must be one of fatal, error, warn, info, debug, trace, silent, not "loud"');
  });
});

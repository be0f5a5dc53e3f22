import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import crypto from 'node:crypto';
import { findLeader } from '../ha/LeaderFinder.js';
import { useClusterToken } from '../rpc/HttpClient.js';
import { RestClient } from '../rest/RestClient.js';
import { taskManagerUrl } from '../rpc/TaskManagerGateway.js';
import { SpillwayError } from '../errors/Errors.js';
import { ClusterSecret, SECRET_ENV } from '../security/ClusterSecret.js';
import { JOBMANAGER_OPTIONS } from './commands/JobManagerCommand.js';
import { TASKMANAGER_OPTIONS } from './commands/TaskManagerCommand.js';
import { REGISTRATION_TIMEOUT_MS, STOP_GRACE_MS, type LocalClusterOptions } from './LocalClusterOptions.js';
import { optionsFor } from './OptionTable.js';

/** The `spillway` command of this package, found from here whether this runs compiled or as source. */
function spillwayBin(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new SpillwayError('SPW_ERR_PROCESS', 'cannot find the spillway package root');
    dir = parent;
  }
  return path.join(dir, 'bin', 'spillway.js');
}

const MAIN = spillwayBin();

const EITHER_OPTIONS = { ...JOBMANAGER_OPTIONS, ...TASKMANAGER_OPTIONS };

/**
 * The well-known name of the folder of the local cluster whose JobManager listens on
 * `port`: a link to its data folder, made once the JobManager holds the port (so no
 * two clusters can claim it); clients on this machine find the secret through it.
 */
export function localClusterLink(port: number): string {
  return path.join(os.tmpdir(), `spillway-local-${port}`);
}

/** The secret file of the local cluster whose JobManager listens on `port`. */
export function localSecretFile(port: number): string {
  return path.join(localClusterLink(port), 'secret');
}

/**
 * A JobManager and N TaskManager child processes of the `spillway` command, real
 * TCP between them, sharing one cluster secret (written, mode 0600, to `secretFile`).
 * This process becomes a client of the cluster: its calls to the JobManager carry the
 * secret. stop() ends them all; so does the end of this process.
 */
export class LocalCluster {
  readonly processes: ChildProcess[] = [];
  url = '';
  /** With HA: every JobManager's URL (the first is `url`), and its process now. */
  readonly jobManagerUrls: string[] = [];
  private readonly jobManagerProcesses: ChildProcess[] = [];
  /** With HA: the cluster id the JobManagers share. */
  readonly clusterId: string;
  readonly secret: ClusterSecret;
  /** Holds the secret and every process's folder; removed on stop, even after a TaskManager was killed. */
  private readonly dataDir: string;
  /** TaskManagers started so far: the next one's index. */
  private started = 0;
  /** Each TaskManager process's spill folder. */
  readonly spillDirOf = new Map<ChildProcess, string>();

  /** The options of `extraArgs` each command takes. */
  private readonly jobManagerExtraArgs: string[];
  private readonly taskManagerExtraArgs: string[];

  constructor(private readonly options: LocalClusterOptions) {
    const extraArgs = options.extraArgs ?? [];
    this.jobManagerExtraArgs = optionsFor(JOBMANAGER_OPTIONS, EITHER_OPTIONS, extraArgs);
    this.taskManagerExtraArgs = optionsFor(TASKMANAGER_OPTIONS, EITHER_OPTIONS, extraArgs);
    this.secret = options.secret ?? ClusterSecret.generate();
    this.dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-local-'));
    if ((options.jobManagers ?? 1) > 1 && options.ha === undefined) throw new SpillwayError('SPW_ERR_USAGE', 'several JobManagers need --ha: a PostgreSQL they elect their leader in');
    this.clusterId = options.ha?.clusterId ?? `local-${crypto.randomBytes(4).toString('hex')}`;
  }

  /** The file that holds the cluster secret. */
  get secretFile(): string {
    return path.join(this.dataDir, 'secret');
  }

  async start(): Promise<string> {
    fs.mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    this.secret.writeTo(this.secretFile);
    // If this process ends first, no child may outlive it: one listener for all of them.
    process.once('exit', this.killAll);
    if (this.options.ha) await this.startHaJobManagers();
    else this.url = await this.startJobManager(this.options.port ?? 0);
    linkClusterDir(localClusterLink(Number(new URL(this.url).port)), this.dataDir);
    useClusterToken(this.url, this.secret.token);
    for (let i = 0; i < this.options.taskManagers; i++) this.addTaskManager();
    await this.waitForTaskManagers();
    return this.url;
  }

  /**
   * Starts one more TaskManager (it registers by itself), on a spill folder of its own
   * or on `spillDir` (one a killed TaskManager left: it empties it first); returns its process.
   */
  addTaskManager(spillDir = this.taskManagerDir(this.started++)): ChildProcess {
    const jobManager = this.options.ha ? this.jobManagerUrls.join(',') : this.url;
    const args = ['taskmanager', '--jobmanager', jobManager, '--slots', String(this.options.slots), '--spill-dir', spillDir];
    if (this.options.memory) args.push('--memory', this.options.memory);
    if (this.options.managedMemory) args.push('--managed-memory', this.options.managedMemory);
    if (this.options.bufferSize) args.push('--buffer-size', this.options.bufferSize);
    const child = this.spawn([...args, ...this.taskManagerExtraArgs]);
    this.spillDirOf.set(child, spillDir);
    return child;
  }

  async stop(): Promise<void> {
    // TaskManagers first: one that sees a peer go reports it to the JobManager, which must still be there to hear it.
    const jobManagers = this.options.ha ? this.jobManagerProcesses : this.processes.slice(0, 1);
    await Promise.all(this.processes.filter((p) => !jobManagers.includes(p)).map(terminate));
    await Promise.all(jobManagers.map(terminate));
    process.off('exit', this.killAll);
    if (this.url !== '') unlinkClusterDir(localClusterLink(Number(new URL(this.url).port)), this.dataDir);
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** The spill folder of the i-th TaskManager (its partitions and its copies of job modules). */
  taskManagerDir(i: number): string {
    return path.join(this.dataDir, `taskmanager-${i}`);
  }

  /** The JobManager's data dir, unless --data-dir was given in jobManagerArgs. */
  get jobManagerDir(): string {
    return path.join(this.dataDir, 'jobmanager');
  }

  /** The JobManager process (the first child). */
  get jobManager(): ChildProcess {
    return this.processes[0];
  }

  /**
   * Kills the JobManager (SIGKILL: as a crash would) and starts another on the same
   * port and data dir; the TaskManagers are left to notice and register again.
   */
  async restartJobManager(): Promise<string> {
    const old = this.jobManager;
    if (old.exitCode === null && old.signalCode === null) {
      const exited = new Promise((resolve) => old.once('exit', resolve));
      old.kill('SIGKILL');
      await exited;
    }
    const url = await this.startJobManager(Number(new URL(this.url).port));
    if (url !== this.url) throw new SpillwayError('SPW_ERR_PROCESS', `the restarted jobmanager listens on ${url}, not ${this.url}`);
    return url;
  }

  /** With HA: the process of the i-th JobManager now. */
  jobManagerProcess(i: number): ChildProcess {
    return this.jobManagerProcesses[i];
  }

  /** With HA: which JobManager leads now (its index), if one does. */
  async leader(): Promise<number | undefined> {
    const leader = await findLeader(this.jobManagerUrls);
    return leader === undefined ? undefined : this.jobManagerUrls.indexOf(leader.url);
  }

  /** With HA: starts the i-th JobManager again (after a kill), on its port and data dir: it joins as a standby. */
  async restartHaJobManager(i: number): Promise<void> {
    const old = this.jobManagerProcesses[i];
    if (old.exitCode === null && old.signalCode === null) throw new SpillwayError('SPW_ERR_PROCESS', `jobmanager ${i} still runs`);
    const url = await this.spawnHaJobManager(i, Number(new URL(this.jobManagerUrls[i]).port));
    if (url !== this.jobManagerUrls[i]) throw new SpillwayError('SPW_ERR_PROCESS', `the restarted jobmanager listens on ${url}, not ${this.jobManagerUrls[i]}`);
  }

  /** The JobManagers of an HA cluster, each on a data dir of its own, sharing one checkpoint folder; the first on `port`. */
  private async startHaJobManagers(): Promise<void> {
    const count = this.options.jobManagers ?? 1;
    for (let i = 0; i < count; i++) {
      const url = await this.spawnHaJobManager(i, i === 0 ? (this.options.port ?? 0) : 0);
      this.jobManagerUrls.push(url);
      useClusterToken(url, this.secret.token);
    }
    this.url = this.jobManagerUrls[0];
  }

  private async spawnHaJobManager(i: number, port: number): Promise<string> {
    const ha = this.options.ha!;
    const args = ['jobmanager', '--port', String(port), '--ha', ha.url, '--cluster-id', this.clusterId, ...this.heartbeatArgs(), ...(this.options.jobManagerArgs ?? [])];
    args.push('--data-dir', path.join(this.dataDir, `jobmanager-${i}`));
    // Every JobManager must find every checkpoint: one folder for all of them.
    if (![...args, ...this.jobManagerExtraArgs].includes('--checkpoint-dir')) args.push('--checkpoint-dir', path.join(this.dataDir, 'checkpoints'));
    const jm = this.spawn([...args, ...this.jobManagerExtraArgs], true, this.options.jobManagerNodeArgs);
    const previous = this.jobManagerProcesses[i];
    if (previous !== undefined) this.processes.splice(this.processes.indexOf(previous), 1);
    this.jobManagerProcesses[i] = jm;
    return announcedUrl(jm);
  }

  private async startJobManager(port: number): Promise<string> {
    const args = ['jobmanager', '--port', String(port), ...this.heartbeatArgs(), ...(this.options.jobManagerArgs ?? [])];
    if (!args.includes('--data-dir')) args.push('--data-dir', this.jobManagerDir);
    const jm = this.spawn([...args, ...this.jobManagerExtraArgs], true, this.options.jobManagerNodeArgs);
    // The JobManager stays the first child, also after a restart.
    this.processes.pop();
    if (this.processes.length === 0) this.processes.push(jm);
    else this.processes[0] = jm;
    return announcedUrl(jm);
  }

  private readonly killAll = (): void => {
    for (const child of this.processes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };

  private heartbeatArgs(): string[] {
    return this.options.heartbeatTimeoutMs ? ['--heartbeat-timeout', String(this.options.heartbeatTimeoutMs)] : [];
  }

  private spawn(args: string[], captureStdout = false, nodeArgs: string[] = []): ChildProcess {
    const output = this.options.stdio === 'ignore' ? 'ignore' : 'inherit';
    const child = spawn(process.execPath, [...nodeArgs, MAIN, ...args], {
      stdio: ['ignore', captureStdout ? 'pipe' : output, this.options.stdio === 'pipe' ? 'pipe' : output],
      env: { ...process.env, [SECRET_ENV]: this.secret.token },
    });
    this.processes.push(child);
    return child;
  }

  /** Waits until `count` TaskManagers are registered (by default as many as started with the cluster). */
  async waitForTaskManagers(count = this.options.taskManagers): Promise<void> {
    const deadline = Date.now() + REGISTRATION_TIMEOUT_MS;
    for (;;) {
      const taskmanagers = await new RestClient(this.url).taskManagers();
      // This process may call the TaskManagers too (their /status), with the same secret.
      for (const tm of taskmanagers) useClusterToken(taskManagerUrl(tm), this.secret.token);
      if (taskmanagers.length >= count) return;
      if (Date.now() > deadline) throw new SpillwayError('SPW_ERR_PROCESS', `only ${taskmanagers.length} of ${count} taskmanagers registered`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The JobManager prints `listening on URL` once it serves. */
function announcedUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const match = /listening on (https?:\/\/\S+)/.exec(seen);
      if (match) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new SpillwayError('SPW_ERR_PROCESS', `the jobmanager exited with ${code} before it listened: ${seen}`)));
  });
}

/** Points the port's well-known name at the data folder; a link left by a cluster that died before is replaced. */
function linkClusterDir(link: string, dataDir: string): void {
  fs.rmSync(link, { force: true, recursive: true });
  fs.symlinkSync(dataDir, link, 'dir');
}

/** Removes the link if it still points at this cluster's folder. */
function unlinkClusterDir(link: string, dataDir: string): void {
  try {
    if (fs.readlinkSync(link) === dataDir) fs.unlinkSync(link);
  } catch {
    // Gone already, or not a link of ours.
  }
}

/** SIGTERM, then SIGKILL if the process has not exited STOP_GRACE_MS later; resolves once it has exited. */
function terminate(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS).unref();
  });
}

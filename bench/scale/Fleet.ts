/**
 * A simulated fleet of TaskManagers in a few child processes (fleetProcess.ts), for a
 * real JobManager: started, asked for what it saw, one of its TaskManagers lost, stopped.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { packageRoot } from '../results.js';
import type { FleetCounts } from './SimulatedTaskManagers.js';

export interface FleetSpec {
  jobManager: string;
  secretFile: string;
  /** TaskManagers in all, shared out over `processes`. */
  taskManagers: number;
  processes: number;
  slots: number;
  taskMs: number;
  heartbeatMs: number;
}

/** Always the built file, also when this module runs as source (a test): `npm run build` first. */
const PROCESS = path.join(packageRoot(), 'dist', 'bench', 'scale', 'fleetProcess.js');

export class Fleet {
  private constructor(
    private readonly children: ChildProcess[],
    /** Each process's TaskManager ids, by process. */
    readonly ids: string[][],
  ) {}

  static async start(spec: FleetSpec): Promise<Fleet> {
    const children: ChildProcess[] = [];
    try {
      const ids = await Promise.all(
        Array.from({ length: spec.processes }, (_, p) => {
          const count = Math.floor(((p + 1) * spec.taskManagers) / spec.processes) - Math.floor((p * spec.taskManagers) / spec.processes);
          const child = fork(PROCESS, [spec.jobManager, spec.secretFile, String(count), String(spec.slots), String(spec.taskMs), String(spec.heartbeatMs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
          children.push(child);
          return once<{ ready: string[] }>(child, 'ready').then((m) => m.ready);
        }),
      );
      return new Fleet(children, ids);
    } catch (error) {
      for (const child of children) child.kill('SIGKILL');
      throw error;
    }
  }

  /** Every process's counts, summed. */
  async counts(): Promise<FleetCounts> {
    const all = await Promise.all(this.children.map((child) => (child.send({ counts: true }), once<{ counts: FleetCounts }>(child, 'counts').then((m) => m.counts))));
    const reports: Record<string, number> = {};
    for (const c of all) for (const [state, n] of Object.entries(c.reports)) reports[state] = (reports[state] ?? 0) + n;
    return { deployed: all.flatMap((c) => c.deployed), reports, channels: all.reduce((s, c) => s + c.channels, 0), failedCalls: all.reduce((s, c) => s + c.failedCalls, 0) };
  }

  /** One TaskManager stops beating and answering, as if SIGKILLed. */
  lose(id: string): void {
    const p = this.ids.findIndex((ids) => ids.includes(id));
    this.children[p].send({ lose: id });
  }

  /** Stops every process; kills one that does not stop. */
  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.send({ stop: true });
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}

/** The child's next message that has `key`; rejects if it exits first. */
function once<T>(child: ChildProcess, key: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: Record<string, unknown>): void => {
      if (!(key in message)) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null): void => reject(new Error(`a fleet process exited (${code}) before its ${key}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

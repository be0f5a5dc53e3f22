import { Worker } from 'node:worker_threads';
import { authorizationHeader, clientCredentials } from './HttpClient.js';
import type { HeartbeatData, HeartbeatEvent, HeartbeatUpdate, Registered } from './HeartbeatThread.js';

export type { Registered } from './HeartbeatThread.js';

/** A heartbeat's answer: the modules the JobManager keeps, as of the time the heartbeat was sent. */
export type OnKeptModules = (modules: ReadonlySet<string>, asOf: number) => void;

/** What a TaskManager is told of its heartbeats. */
export interface HeartbeatListener {
  /** The JobManager did not know `id` (or is a new JobManager process); a 404 to a heartbeat sent before the last setId() is not reported. */
  lost(id: string): void;
  /** A heartbeat failed (no answer, an error status). */
  failed(message: string): void;
  /** The JobManager refused the credentials (401). */
  unauthorized(message: string): void;
  keptModules: OnKeptModules;
}

/**
 * Heartbeats to the JobManager from a thread of its own (HeartbeatThread.ts says why),
 * with this process's client credentials, every `intervalMs`.
 */
export class Heartbeat {
  private readonly worker: Worker;
  private registered: Registered;

  constructor(jobManager: string, registered: Registered, intervalMs: number, listener: HeartbeatListener) {
    this.registered = registered;
    const data: HeartbeatData = { url: jobManager, registered, intervalMs, authorization: authorizationHeader(), tls: clientCredentials().tls ?? null };
    // Compiled beside this file, as the task threads are (TaskThreadPool).
    this.worker = new Worker(new URL('./HeartbeatThread.js', import.meta.url), { workerData: data });
    this.worker.unref();
    // A thread that dies sends no more heartbeats: the JobManager will declare this TaskManager lost.
    this.worker.on('error', (error) => listener.failed(`the heartbeat thread died: ${error.message}`));
    this.worker.on('message', (event: HeartbeatEvent) => {
      if (event.type === 'lost') {
        if (event.id === this.registered.id && event.session === this.registered.session) listener.lost(event.id);
      } else if (event.type === 'unauthorized') listener.unauthorized(event.message);
      else if (event.type === 'error') listener.failed(event.message);
      // An answer to a heartbeat sent under an older id may be of an older JobManager: not acted on.
      else if (event.sentAs === this.registered.id) listener.keptModules(new Set(event.answer.modules ?? []), event.sentAt);
    });
  }

  /** After registering again under a new id, maybe with another JobManager (the new leader, at `url`). */
  setId(registered: Registered, url?: string): void {
    this.registered = registered;
    const update: HeartbeatUpdate = { ...registered, url };
    this.worker.postMessage(update);
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// Runs in a worker thread of its own: a task that keeps the TaskManager's event loop
// busy (a long sort, a big hash join build) must not make the JobManager think the
// TaskManager is lost. Plain JavaScript, so that it runs from source and compiled alike.
// undici's request() here, not the global fetch(): a fetch() a second from a worker
// halved the shuffle throughput of the whole process (measured; cause not found).
const HEARTBEAT_LOOP = `
const { parentPort, workerData } = require('node:worker_threads');
const { request } = require(workerData.undici);
let id = workerData.id;
parentPort.on('message', (message) => { id = message; });
setInterval(async () => {
  const sentAs = id;
  try {
    const response = await request(workerData.url + '/internal/taskmanagers/' + sentAs + '/heartbeat', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', headersTimeout: 5000, bodyTimeout: 5000,
    });
    await response.body.dump();
    if (response.statusCode === 404) parentPort.postMessage({ lost: sentAs });
    else if (response.statusCode >= 400) parentPort.postMessage({ error: 'status ' + response.statusCode });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
}, workerData.intervalMs);
`;

/** Heartbeats to the JobManager from a worker thread; reports a failed one, and the JobManager not knowing this TaskManager. */
export class Heartbeat {
  private readonly worker: Worker;

  /** onLost gets the id the JobManager did not know, which may be an old one. */
  constructor(jobManager: string, id: string, intervalMs: number, onLost: (id: string) => void, onError: (message: string) => void) {
    this.worker = new Worker(HEARTBEAT_LOOP, { eval: true, workerData: { url: jobManager, id, intervalMs, undici: createRequire(import.meta.url).resolve('undici') } });
    this.worker.unref();
    this.worker.on('message', (message: { lost?: string; error?: string }) => {
      if (message.lost) onLost(message.lost);
      else if (message.error) onError(message.error);
    });
  }

  /** After registering again under a new id. */
  setId(id: string): void {
    this.worker.postMessage(id);
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}

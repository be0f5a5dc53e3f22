import { Worker } from 'node:worker_threads';

// Runs in a worker thread of its own: a task that keeps the TaskManager's event loop
// busy (a long sort, a big hash join build) must not make the JobManager think the
// TaskManager is lost. Plain JavaScript, so that it runs from source and compiled alike.
const HEARTBEAT_LOOP = `
const { parentPort, workerData } = require('node:worker_threads');
let id = workerData.id;
parentPort.on('message', (message) => { id = message; });
setInterval(async () => {
  const sentAs = id;
  try {
    const response = await fetch(workerData.url + '/internal/taskmanagers/' + sentAs + '/heartbeat', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(5000),
    });
    await response.arrayBuffer();
    if (response.status === 404) parentPort.postMessage({ lost: sentAs });
    else if (response.status >= 400) parentPort.postMessage({ error: 'status ' + response.status });
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
    this.worker = new Worker(HEARTBEAT_LOOP, { eval: true, workerData: { url: jobManager, id, intervalMs } });
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

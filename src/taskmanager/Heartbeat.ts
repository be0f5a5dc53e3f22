import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { authorizationHeader, clientCredentials } from '../job/Http.js';

// Runs in a worker thread of its own: a task that keeps the TaskManager's event loop
// busy (a long sort, a big hash join build) must not make the JobManager think the
// TaskManager is lost. Plain JavaScript, so that it runs from source and compiled alike.
// undici's request() here, not the global fetch(): a fetch() a second from a worker
// halved the shuffle throughput of the whole process (measured; cause not found).
// The body names the JobManager session this TaskManager registered with: a restarted
// JobManager answers 404, as it does for an id it does not know. One connection, one
// heartbeat at a time: a slow answer skips a beat instead of opening another socket.
const HEARTBEAT_LOOP = `
const { parentPort, workerData } = require('node:worker_threads');
const { Client } = require(workerData.undici);
const base = new URL(workerData.url);
const tls = workerData.tls;
const client = new Client(base.origin, tls ? { connect: { ca: tls.ca, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.3' } } : {});
const headers = { 'content-type': 'application/json', ...workerData.authorization };
let registered = workerData.registered;
let busy = false;
parentPort.on('message', (message) => { registered = message; });
setInterval(async () => {
  if (busy) return;
  busy = true;
  const sent = registered;
  const sentAt = Date.now();
  try {
    const response = await client.request({
      path: base.pathname.replace(/\\/$/, '') + '/internal/taskmanagers/' + sent.id + '/heartbeat',
      method: 'POST', headers, body: JSON.stringify({ session: sent.session }),
      headersTimeout: 5000, bodyTimeout: 5000,
    });
    if (response.statusCode === 200) {
      parentPort.postMessage({ answer: await response.body.json(), sentAs: sent.id, sentAt });
      return;
    }
    const text = await response.body.text();
    if (response.statusCode === 401) parentPort.postMessage({ unauthorized: text });
    else if (response.statusCode === 404) parentPort.postMessage({ lost: sent.id, session: sent.session });
    else parentPort.postMessage({ error: 'status ' + response.statusCode });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  } finally {
    busy = false;
  }
}, workerData.intervalMs);
`;

/** What the JobManager answered to a registration: the id, and the JobManager process (session) it is valid with. */
export interface Registered {
  id: string;
  session: string;
}

/** A heartbeat's answer: the modules the JobManager keeps, as of the time the heartbeat was sent. */
export type OnKeptModules = (modules: ReadonlySet<string>, asOf: number) => void;

interface Message {
  lost?: string;
  session?: string;
  error?: string;
  unauthorized?: string;
  answer?: { modules?: string[] };
  sentAs?: string;
  sentAt?: number;
}

/**
 * Heartbeats to the JobManager from a worker thread, with this process's client
 * credentials; reports a failed one, a refused one (401), the JobManager not knowing
 * this TaskManager (or being a new JobManager process), and the modules it keeps.
 */
export class Heartbeat {
  private readonly worker: Worker;
  private registered: Registered;

  /** onLost gets the id the JobManager did not know; a 404 to a heartbeat sent before the last setId() is not reported. */
  constructor(
    jobManager: string,
    registered: Registered,
    intervalMs: number,
    onLost: (id: string) => void,
    onError: (message: string) => void,
    onUnauthorized: (message: string) => void,
    onKeptModules: OnKeptModules = () => {},
  ) {
    this.registered = registered;
    this.worker = new Worker(HEARTBEAT_LOOP, {
      eval: true,
      workerData: {
        url: jobManager,
        registered,
        intervalMs,
        undici: createRequire(import.meta.url).resolve('undici'),
        authorization: authorizationHeader(),
        tls: clientCredentials().tls ?? null,
      },
    });
    this.worker.unref();
    this.worker.on('message', (message: Message) => {
      if (message.lost) {
        if (message.lost === this.registered.id && message.session === this.registered.session) onLost(message.lost);
      } else if (message.unauthorized !== undefined) onUnauthorized(message.unauthorized);
      else if (message.error) onError(message.error);
      // An answer to a heartbeat sent under an older id may be of an older JobManager: not acted on.
      else if (message.answer && message.sentAs === this.registered.id) onKeptModules(new Set(message.answer.modules ?? []), message.sentAt ?? 0);
    });
  }

  /** After registering again under a new id, maybe with a new JobManager. */
  setId(registered: Registered): void {
    this.registered = registered;
    this.worker.postMessage(registered);
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}

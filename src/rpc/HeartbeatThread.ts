/**
 * The heartbeat thread's code (started by Heartbeat.ts). It runs in a worker thread of
 * its own: a task that keeps the TaskManager's event loop busy (a long sort, a big hash
 * join build) must not make the JobManager think the TaskManager is lost.
 * undici's Client here, not the global fetch(): a fetch() a second from a worker halved
 * the shuffle throughput of the whole process (measured; cause not found).
 * The body names the JobManager session this TaskManager registered with: a restarted
 * JobManager answers 404, as it does for an id it does not know. One connection, one
 * heartbeat at a time: a slow answer skips a beat instead of opening another socket.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Client } from 'undici';
import { JOBMANAGER_ROUTES, pathOf, type JobManagerAnswer } from './ControlPlane.js';

/** What the heartbeat thread is started with. */
export interface HeartbeatData {
  /** The JobManager's base URL. */
  url: string;
  registered: Registered;
  intervalMs: number;
  /** The Authorization header of this process's calls, if it has a token. */
  authorization: Record<string, string>;
  tls: { ca: Buffer; cert?: Buffer; key?: Buffer } | null;
}

/** What the JobManager answered to a registration: the id, and the JobManager process (session) it is valid with. */
export interface Registered {
  id: string;
  session: string;
}

/** What the thread tells the TaskManager of each heartbeat. */
export type HeartbeatEvent =
  /** The JobManager answered: the modules it keeps, as of the time the heartbeat was sent under `sentAs`. */
  | { type: 'answer'; answer: JobManagerAnswer; sentAs: string; sentAt: number }
  /** The JobManager does not know this id of this session (404): register again. */
  | { type: 'lost'; id: string; session: string }
  /** The JobManager refused the credentials (401). */
  | { type: 'unauthorized'; message: string }
  /** No answer, or another status. */
  | { type: 'error'; message: string };

/** Messages to the thread: the TaskManager registered again, maybe with another JobManager (the new leader, at `url`). */
export type HeartbeatUpdate = Registered & { url?: string };

/** How long a heartbeat waits for its answer. */
const HEARTBEAT_TIMEOUT_MS = 5000;

const port = parentPort!;
const data = workerData as HeartbeatData;
const tls = data.tls;
const headers = { 'content-type': 'application/json', ...data.authorization };
let registered: Registered = data.registered;
let busy = false;
let { client, prefix } = connectTo(data.url);

function connectTo(url: string): { client: Client; prefix: string } {
  const base = new URL(url);
  return { client: new Client(base.origin, tls ? { connect: { ca: tls.ca, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.3' } } : {}), prefix: base.pathname.replace(/\/$/, '') };
}

port.on('message', (update: HeartbeatUpdate) => {
  registered = { id: update.id, session: update.session };
  if (update.url === undefined) return;
  void client.close().catch(() => undefined);
  ({ client, prefix } = connectTo(update.url));
});
setInterval(() => void beat(), data.intervalMs);

function tell(event: HeartbeatEvent): void {
  port.postMessage(event);
}

async function beat(): Promise<void> {
  if (busy) return;
  busy = true;
  const sent = registered;
  const sentAt = Date.now();
  const route = JOBMANAGER_ROUTES.heartbeat;
  try {
    const response = await client.request({
      path: prefix + pathOf(route, { id: sent.id }),
      method: route.method,
      headers,
      body: JSON.stringify({ session: sent.session }),
      headersTimeout: HEARTBEAT_TIMEOUT_MS,
      bodyTimeout: HEARTBEAT_TIMEOUT_MS,
    });
    if (response.statusCode === 200) {
      tell({ type: 'answer', answer: (await response.body.json()) as JobManagerAnswer, sentAs: sent.id, sentAt });
      return;
    }
    const text = await response.body.text();
    if (response.statusCode === 401) tell({ type: 'unauthorized', message: text });
    else if (response.statusCode === 404) tell({ type: 'lost', id: sent.id, session: sent.session });
    else tell({ type: 'error', message: `status ${response.statusCode}` });
  } catch (error) {
    tell({ type: 'error', message: error instanceof Error ? error.message : String(error) });
  } finally {
    busy = false;
  }
}

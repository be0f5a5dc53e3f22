/**
 * One process of a simulated fleet (bench/scale/Fleet.ts starts a few): its
 * SimulatedTaskManagers, driven over IPC. Arguments: the JobManager's URL, the cluster
 * secret's file, TaskManagers, slots each, task ms, heartbeat ms. Messages in:
 * `{ lose: id }`, `{ counts: true }`, `{ stop: true }`; out: `{ ready: ids }`,
 * `{ counts }`, `{ stopped: true }`.
 */
import fs from 'node:fs';
import { Agent, setGlobalDispatcher } from 'undici';
import { useClusterToken } from '../../src/rpc/HttpClient.js';
import { SimulatedTaskManagers } from './SimulatedTaskManagers.js';

/**
 * A real TaskManager is a process with its own connections; a hundred in one process
 * share a few, queued, or their bursts (every task's RUNNING at once) overflow the
 * JobManager's accept queue.
 */
const CONNECTIONS_TO_THE_JOBMANAGER = 16;

const [jobManager, secretFile, taskManagers, slots, taskMs, heartbeatMs] = process.argv.slice(2);
useClusterToken(jobManager, fs.readFileSync(secretFile, 'utf8').trim());
setGlobalDispatcher(new Agent({ connections: CONNECTIONS_TO_THE_JOBMANAGER, keepAliveTimeout: 4000 }));
const fleet = new SimulatedTaskManagers({ jobManager, taskManagers: Number(taskManagers), slots: Number(slots), taskMs: Number(taskMs), heartbeatMs: Number(heartbeatMs) });
process.on('message', (message: { lose?: string; counts?: boolean; stop?: boolean }) => {
  if (message.lose !== undefined) fleet.lose(message.lose);
  if (message.counts) process.send!({ counts: fleet.counts });
  if (message.stop) void fleet.stop().then(() => process.send!({ stopped: true }, () => process.exit(0)));
});
// The parent gone, nothing of the fleet stays.
process.on('disconnect', () => process.exit(0));
await fleet.start();
process.send!({ ready: fleet.ids });

import { ExecutionGraph } from './ExecutionGraph.js';
import type { Job } from '../jobs/Job.js';
import type { TaskManagerInfo, TaskManagerRegistry } from '../cluster/TaskManagerRegistry.js';

/**
 * Places a queued job on the live TaskManagers and takes its slots if they are all
 * free; returns its graph, or null while slots are short. The graph is built from the
 * validated job at the first pass that finds TaskManagers, and only placed again at
 * the next (`job.plan`).
 */
export function allocateSlots(job: Job, registry: Pick<TaskManagerRegistry, 'available' | 'get'>): ExecutionGraph | null {
  const taskManagers = registry.available();
  if (taskManagers.length === 0) return null;
  const graph = placed(job, taskManagers);
  for (const [id, slots] of graph.slots) if (registry.get(id)!.freeSlots < slots) return null;
  for (const [id, slots] of graph.slots) registry.get(id)!.freeSlots -= slots;
  return graph;
}

function placed(job: Job, taskManagers: TaskManagerInfo[]): ExecutionGraph {
  if (job.plan === null) {
    job.plan = new ExecutionGraph(job.id, job.validated, job.exchange, job.compression, job.ref, taskManagers, job.bufferTimeout, job.firstAttempt);
  } else {
    job.plan.place(taskManagers);
  }
  return job.plan;
}

/** Gives each slot of the job on a gone TaskManager a free slot on a live one; returns how many it could not. */
export function relocateSlots(graph: ExecutionGraph, registry: TaskManagerRegistry): number {
  let missing = 0;
  graph.slotOwners.forEach((owner, slot) => {
    if (registry.get(owner)) return;
    const target = registry.available().find((tm) => tm.freeSlots > 0);
    if (!target) {
      missing++;
      return;
    }
    target.freeSlots--;
    graph.moveSlot(slot, target);
  });
  return missing;
}

/** Gives an ended job's slots back to the TaskManagers still registered. */
export function releaseSlots(graph: ExecutionGraph, registry: TaskManagerRegistry): void {
  for (const [id, slots] of graph.slots) {
    const tm = registry.get(id);
    if (tm) tm.freeSlots += slots;
  }
}

/** Free slots on the TaskManagers where tasks may go. */
export function freeSlots(taskManagers: TaskManagerInfo[]): number {
  return taskManagers.reduce((sum, tm) => sum + tm.freeSlots, 0);
}

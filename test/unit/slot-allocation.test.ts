/**
 * A job waiting for slots: its execution graph is built once, from the job validated at
 * submission, and only placed again at each scheduling pass.
 */
import { expect, test } from 'vitest';
import type { JobDefinition } from '../../src/job/JobDefinition.js';
import { validatedJob } from '../../src/job/ValidatedJob.js';
import type { TaskManagerInfo } from '../../src/jobmanager/cluster/TaskManagerRegistry.js';
import { createJob } from '../../src/jobmanager/jobs/Job.js';
import { DEFAULT_RESTART } from '../../src/jobmanager/failover/RestartStrategy.js';
import { allocateSlots } from '../../src/jobmanager/scheduler/SlotAllocation.js';
import { partitionType } from '../../src/network/networkThread/partition/PartitionTypes.js';

const DEFINITION: JobDefinition = {
  name: 'two',
  stages: [
    { name: 'a', source: { kind: 'generate', generate: () => [] } },
    { name: 'b', inputs: [{ from: 'a', partitioning: { type: 'rebalance' } }], sink: { kind: 'discard' } },
  ],
};

function taskManager(i: number, freeSlots: number): TaskManagerInfo {
  return { id: `tm-${i}`, host: '127.0.0.1', dataPort: 1000 + i, httpPort: 2000 + i, slots: freeSlots, freeSlots, memory: 1 << 26, lastHeartbeat: 0, registered: 0 };
}

function registry(taskManagers: TaskManagerInfo[]): { available: () => TaskManagerInfo[]; get: (id: string) => TaskManagerInfo | undefined } {
  return { available: () => taskManagers, get: (id) => taskManagers.find((tm) => tm.id === id) };
}

test('a job short of slots keeps the graph of its first pass, placed again on the TaskManagers of the next', () => {
  const validated = validatedJob(DEFINITION, 2);
  const job = createJob(1, { name: 'two', validated, ref: { builtin: 'x', params: {} }, parallelism: 2, exchange: partitionType('pipelined'), compression: null, bufferTimeout: 100, restart: DEFAULT_RESTART });
  expect(allocateSlots(job, registry([taskManager(1, 1)]))).toBeNull();
  const plan = job.plan;
  expect(plan?.stages).toBe(validated.stages);
  const graph = allocateSlots(job, registry([taskManager(1, 1), taskManager(2, 1)]));
  expect(graph).toBe(plan);
  expect(graph!.slotOwners).toEqual(['tm-1', 'tm-2']);
  expect(graph!.verticesOf('b').map((v) => v.taskManagerId)).toEqual(['tm-1', 'tm-2']);
});

test("a job a leader submits starts its subtasks at the leader's first attempt, which a restart goes on from", () => {
  const validated = validatedJob(DEFINITION, 2);
  const firstAttempt = 3 * 2 ** 20;
  const job = createJob(1, { name: 'two', validated, ref: { builtin: 'x', params: {} }, parallelism: 2, exchange: partitionType('pipelined'), compression: null, bufferTimeout: 100, restart: DEFAULT_RESTART, firstAttempt });
  const graph = allocateSlots(job, registry([taskManager(1, 2)]))!;
  expect([...graph.vertices.values()].map((v) => v.attempt)).toEqual([firstAttempt, firstAttempt, firstAttempt, firstAttempt]);
  const vertex = graph.verticesOf('a')[0];
  vertex.newAttempt();
  expect(vertex.attempt).toBe(firstAttempt + 1);
});

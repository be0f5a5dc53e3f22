import { expect, test } from 'vitest';
import type { ShuffleEnvironment } from '../../src/network/networkThread/ShuffleEnvironment.js';
import { emptyCounters, type TaskCounters, type TaskDeploymentDescriptor } from '../../src/rpc/TaskDeployment.js';
import { TaskManagerMetrics, type MeteredTask } from '../../src/taskmanager/TaskManagerMetrics.js';

function attempt(attemptNumber: number, counters: Partial<TaskCounters>): MeteredTask {
  const descriptor = { jobId: 'job-1', taskId: 'job-1.count.0', attempt: attemptNumber, stage: 'count', subtask: 0 } as TaskDeploymentDescriptor;
  return { descriptor, counters: { ...emptyCounters(), ...counters }, bufferStats: () => ({ inputs: [], outputs: [] }) };
}

/** The value of a per-task series of the text, for subtask 0 of stage count. */
function series(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes('stage="count"'));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

test("a subtask restarted on the same TaskManager shows its new attempt's records beside the ended one's, and the new attempt's gauges", async () => {
  const live: MeteredTask[] = [];
  // The task series never read the network environment: none is needed.
  const metrics = new TaskManagerMetrics({} as ShuffleEnvironment, () => live);
  const first = attempt(0, { recordsIn: 100, watermark: 5000 });
  metrics.taskEnded(first);
  live.push(attempt(1, { recordsIn: 7, watermark: 9000 }));
  const records = await metrics.registry.getSingleMetricAsString('spillway_task_records_in_total');
  const watermark = await metrics.registry.getSingleMetricAsString('spillway_task_watermark_milliseconds');
  expect(series(records, 'spillway_task_records_in_total')).toBe(107);
  expect(series(watermark, 'spillway_task_watermark_milliseconds')).toBe(9000);
});

test('a task that ended but is still listed live is counted once', async () => {
  const task = attempt(0, { recordsIn: 100 });
  const metrics = new TaskManagerMetrics({} as ShuffleEnvironment, () => [task]);
  metrics.taskEnded(task);
  expect(series(await metrics.registry.getSingleMetricAsString('spillway_task_records_in_total'), 'spillway_task_records_in_total')).toBe(100);
});

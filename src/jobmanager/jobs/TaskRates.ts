import type { TaskCounters } from '../../rpc/TaskDeployment.js';

/** Flink's backpressure levels: backpressured at most 10% of the time is OK, at most 50% LOW, above that HIGH. */
export type BackPressureLevel = 'OK' | 'LOW' | 'HIGH';

/**
 * A task's rates between its last two reports (about a second apart while it runs),
 * or over its whole life once it ended: Flink's busyTimeMsPerSecond,
 * backPressuredTimeMsPerSecond and idleTimeMsPerSecond as ratios, and the records
 * and bytes per second it wrote to each output edge.
 */
export interface TaskRates {
  busyRatio: number;
  backPressuredRatio: number;
  idleRatio: number;
  backPressure: BackPressureLevel;
  outputs: { recordsPerSecond: number; bytesPerSecond: number }[];
}

/** A report as the JobManager received it. */
export interface CounterSample {
  at: number;
  counters: TaskCounters;
}

export function backPressureLevel(ratio: number): BackPressureLevel {
  return ratio <= 0.1 ? 'OK' : ratio <= 0.5 ? 'LOW' : 'HIGH';
}

/** The rates from `from` to `to`; from a zero sample at the task's start when `from` is null. */
export function ratesBetween(from: CounterSample | null, to: CounterSample, startedAt: number): TaskRates {
  const before = from?.counters;
  const delta = (f: (c: TaskCounters) => number | undefined): number => (f(to.counters) ?? 0) - (before ? (f(before) ?? 0) : 0);
  const busy = delta((c) => c.busyMs);
  const backPressured = delta((c) => c.backPressuredMs);
  const idle = delta((c) => c.idleMs);
  const accounted = busy + backPressured + idle;
  const ratio = (ms: number): number => (accounted > 0 ? ms / accounted : 0);
  const seconds = Math.max(1, to.at - (from?.at ?? startedAt)) / 1000;
  const outputs = (to.counters.outputs ?? []).map((out, k) => {
    const earlier = before?.outputs?.[k];
    return { recordsPerSecond: (out.records - (earlier?.records ?? 0)) / seconds, bytesPerSecond: (out.bytes - (earlier?.bytes ?? 0)) / seconds };
  });
  const backPressuredRatio = ratio(backPressured);
  return { busyRatio: ratio(busy), backPressuredRatio, idleRatio: ratio(idle), backPressure: backPressureLevel(backPressuredRatio), outputs };
}

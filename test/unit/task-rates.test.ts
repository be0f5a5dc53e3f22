import { describe, expect, test } from 'vitest';
import { backPressureLevel, ratesBetween } from '../../src/jobmanager/jobs/TaskRates.js';

const counters = (busyMs: number, backPressuredMs: number, idleMs: number, records: number) => ({
  recordsIn: 0,
  bytesIn: 0,
  recordsOut: records,
  bytesOut: records * 10,
  spilledBytes: 0,
  busyMs,
  backPressuredMs,
  idleMs,
  outputs: [{ records, bytes: records * 10 }],
});

describe('task rates', () => {
  test("backpressure levels are Flink's: OK up to 10%, LOW up to 50%, HIGH above", () => {
    expect([0, 0.1, 0.100001, 0.5, 0.500001, 1].map(backPressureLevel)).toEqual(['OK', 'OK', 'LOW', 'LOW', 'HIGH', 'HIGH']);
  });

  test('ratios and rates are those of the interval between two reports, not of the whole life', () => {
    const first = { at: 10_000, counters: counters(900, 100, 0, 1000) };
    const second = { at: 12_000, counters: counters(1100, 1700, 200, 5000) };
    const rates = ratesBetween(first, second, 9000);
    expect(rates.busyRatio).toBeCloseTo(0.1);
    expect(rates.backPressuredRatio).toBeCloseTo(0.8);
    expect(rates.idleRatio).toBeCloseTo(0.1);
    expect(rates.backPressure).toBe('HIGH');
    expect(rates.outputs).toEqual([{ recordsPerSecond: 2000, bytesPerSecond: 20_000 }]);
  });

  test('without an earlier report the rates run from the start', () => {
    const rates = ratesBetween(null, { at: 14_000, counters: counters(3000, 0, 1000, 8000) }, 10_000);
    expect(rates.busyRatio).toBeCloseTo(0.75);
    expect(rates.backPressure).toBe('OK');
    expect(rates.outputs[0].recordsPerSecond).toBe(2000);
  });

  test('a task that reported no time yet has ratios of 0, not NaN', () => {
    const rates = ratesBetween(null, { at: 1000, counters: { recordsIn: 0, bytesIn: 0, recordsOut: 0, bytesOut: 0, spilledBytes: 0 } }, 1000);
    expect([rates.busyRatio, rates.backPressuredRatio, rates.idleRatio]).toEqual([0, 0, 0]);
    expect(rates.outputs).toEqual([]);
  });
});

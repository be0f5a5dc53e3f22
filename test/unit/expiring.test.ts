import { afterEach, expect, test, vi } from 'vitest';
import { ExpiringMap, ExpiringSet } from '../../src/taskmanager/Expiring.js';

afterEach(() => {
  vi.useRealTimers();
});

test('an ExpiringSet forgets a member the TTL after it was last added, and only then', () => {
  vi.useFakeTimers();
  const set = new ExpiringSet<string>(1000);
  set.add('job-1');
  vi.advanceTimersByTime(600);
  set.add('job-2');
  vi.advanceTimersByTime(500);
  expect([set.has('job-1'), set.has('job-2')]).toEqual([false, true]);
  set.add('job-2');
  vi.advanceTimersByTime(900);
  expect(set.has('job-2')).toBe(true);
  vi.advanceTimersByTime(200);
  expect(set.size).toBe(0);
});

test('an ExpiringMap drops an entry nobody took within the TTL; a deleted one is not dropped again later', () => {
  vi.useFakeTimers();
  const map = new ExpiringMap<string, number>(1000);
  map.set('a', 1);
  map.set('b', 2);
  expect(map.delete('a')).toBe(true);
  vi.advanceTimersByTime(500);
  map.set('a', 3);
  vi.advanceTimersByTime(600);
  expect(map.get('b')).toBeUndefined();
  expect(map.get('a')).toBe(3);
  expect(map.size).toBe(1);
});

/**
 * `npm run bench -- --only ha [--quick]`: the JobManager leader SIGKILLed 10 times (3
 * quick) under a streaming job with exactly-once output into PostgreSQL: time to a new
 * leader, to the first commit after it, and the output rate's dip, p50 and p99, beside a
 * TaskManager's SIGKILL on the same job in the same run (bench/ha.ts). Needs Redis and
 * PostgreSQL on 127.0.0.1 (SPILLWAY_BENCH_REDIS_URL, SPILLWAY_BENCH_POSTGRES_URL).
 */
import { measureHa } from '../ha.js';
import type { BenchSection } from './Section.js';

export const HA: BenchSection = {
  name: 'ha',
  about: 'the JobManager leader SIGKILLed under a streaming exactly-once job: time to a new leader and to the first commit, the rate dip, beside a TaskManager kill',
  run: (quick) => measureHa(quick),
};

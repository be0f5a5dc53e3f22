/**
 * `npm run bench -- --only redis-pg [--quick]`: a bounded job from Redis streams into
 * PostgreSQL on 2 TaskManagers, records per second beside a plain ioredis XREAD loop and
 * a plain pg COPY of the same records (bench/redisPostgres.ts). Needs Redis and
 * PostgreSQL on 127.0.0.1 (SPILLWAY_BENCH_REDIS_URL, SPILLWAY_BENCH_POSTGRES_URL).
 */
import { measureRedisToPostgres } from '../redisPostgres.js';
import type { BenchSection } from './Section.js';

export const REDIS_POSTGRES: BenchSection = {
  name: 'redis-pg',
  about: 'a bounded job from Redis streams into PostgreSQL, records/s beside a plain XREAD loop and a plain COPY',
  run: (quick) => measureRedisToPostgres(quick),
};

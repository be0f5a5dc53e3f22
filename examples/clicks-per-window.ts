// End to end, streaming: click events from a Redis stream, counted per page in tumbling
// windows of event time, each window's count upserted into PostgreSQL as the watermark
// passes its end. Unbounded: it runs until it is canceled.
//   psql -c 'CREATE TABLE page_clicks (page text, window_start timestamptz, window_end timestamptz, clicks integer, PRIMARY KEY (page, window_start))'
//   npx spillway submit examples/clicks-per-window.ts --param redis=redis://127.0.0.1:6379 \
//     --param postgres=postgres://postgres@127.0.0.1:5432/test --param window=60000 --follow
//   redis-cli XADD clicks '*' page /home at $(date +%s%3N)
// With checkpoints (--checkpoint-interval) it is exactly once: the source's position is each
// stream's last id read, and a window's row is written in the transaction of the checkpoint
// after it fired, with the sink task's commit row; without, rows are written as they come
// (and a restart may write a window's row again: the upsert makes that harmless).
import { JobBuilder, numberParam, tumbling, type JobDefinition, type JobParams } from 'spillway';

export default function clicksPerWindow(params: JobParams): JobDefinition {
  const redis = typeof params.redis === 'string' ? params.redis : 'redis://127.0.0.1:6379';
  const postgres = typeof params.postgres === 'string' ? params.postgres : 'postgres://postgres@127.0.0.1:5432/test';
  const stream = typeof params.stream === 'string' ? params.stream : 'clicks';
  const table = typeof params.table === 'string' ? params.table : 'page_clicks';
  const windowMs = numberParam(params, 'window', 60_000, 1);
  const job = new JobBuilder('clicks-per-window');
  job
    .readRedisStream({ url: redis, streams: stream, bounded: false })
    .map((entry) => ({ page: entry.fields.page, at: Number(entry.fields.at) }))
    // Clicks come at most 5 s out of order; a source task with no clicks for 10 s (one
    // without a stream of its own, say) does not hold the windows back.
    .assignTimestamps((click) => click.at, { maxOutOfOrderness: numberParam(params, 'outOfOrder', 5000), idleness: numberParam(params, 'idleness', 10_000, 1) })
    .keyBy((click) => click.page)
    .window(tumbling(windowMs))
    .aggregate({ create: () => 0, add: (count) => count + 1, merge: (a, b) => a + b, result: (count) => count })
    .map((w) => ({ page: w.key, window_start: new Date(w.start), window_end: new Date(w.end), clicks: w.value }))
    .writePostgres({ url: postgres, table, columns: ['page', 'window_start', 'window_end', 'clicks'], upsertKey: ['page', 'window_start'] });
  return job.build();
}

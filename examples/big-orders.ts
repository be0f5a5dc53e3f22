// Redis Streams in and out: the orders of a stream over a threshold, copied to another
// stream with the amount in cents. Bounded: it reads each stream up to its last entry
// when the job starts, then ends.
//   redis-cli XADD orders '*' customer ada amount 120.50
//   npx spillway submit examples/big-orders.ts --param redis=redis://127.0.0.1:6379 \
//     --param streams=orders --param output=big-orders --param over=100 --wait
//   redis-cli XRANGE big-orders - +
// `streams` may name several streams (comma-separated): each is read whole by one task.
import { JobBuilder, numberParam, requireString, type JobDefinition, type JobParams } from 'spillway';

export default function bigOrders(params: JobParams): JobDefinition {
  const url = typeof params.redis === 'string' ? params.redis : 'redis://127.0.0.1:6379';
  const over = numberParam(params, 'over', 100);
  const job = new JobBuilder('big-orders');
  job
    .readRedisStream({ url, streams: requireString(params, 'streams').split(','), batchSize: 1000 })
    .map((entry) => ({ customer: entry.fields.customer, cents: Math.round(Number(entry.fields.amount) * 100), source: `${entry.stream}/${entry.id}` }))
    .filter((order) => order.cents > over * 100)
    .writeRedisStream({ url, stream: requireString(params, 'output') });
  return job.build();
}

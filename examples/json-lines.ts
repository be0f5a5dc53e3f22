// Revenue per category from orders in JSON Lines (a file, a folder or a glob; .gz and .zst are read too):
//   npx spillway submit examples/json-lines.ts --param input=orders/ --wait
//   npx spillway submit examples/json-lines.ts --param input=orders/ --param output=revenue/ --wait
// Lines that are not JSON are skipped and counted (the job's malformedRecords) instead of failing the job.
// With an output folder, the result is written as zstd-compressed JSON Lines: revenue/part-00000.zst, ...
import { JobBuilder, requireString, type JobDefinition, type JobParams } from 'spillway';

interface Order {
  category: string;
  price: number;
  quantity?: number;
}

interface Revenue {
  category: string;
  revenue: number;
  orders: number;
}

export default function revenueByCategory(params: JobParams): JobDefinition {
  const job = new JobBuilder('revenue-by-category');
  const revenue = job
    .readJsonLines<Order>(requireString(params, 'input'), { onError: 'skip' })
    .map((order): Revenue => ({ category: order.category, revenue: order.price * (order.quantity ?? 1), orders: 1 }))
    .name('orders')
    .keyBy((r) => r.category)
    .reduce((a, b) => ({ category: a.category, revenue: a.revenue + b.revenue, orders: a.orders + b.orders }))
    .name('revenue');
  if (params.output === undefined) revenue.collect();
  else revenue.writeJsonLines(requireString(params, 'output'), { compression: 'zstd' });
  return job.build();
}

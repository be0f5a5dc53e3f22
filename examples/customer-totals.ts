// PostgreSQL in and out: each customer's order count and total from a table of orders,
// read in ranges of its id across the source's tasks (as Spark's JDBC reader splits a
// table), upserted into a table of totals. Rerunning it replaces each customer's row.
//   psql -c 'CREATE TABLE orders (id bigint PRIMARY KEY, customer text, amount numeric)'
//   psql -c 'CREATE TABLE customer_totals (customer text PRIMARY KEY, orders integer, total numeric)'
//   npx spillway submit examples/customer-totals.ts --param postgres=postgres://postgres@127.0.0.1:5432/test \
//     --param maxId=1000000 --parallelism 4 --wait
import { JobBuilder, numberParam, type JobDefinition, type JobParams } from 'spillway';

interface Order {
  id: string;
  customer: string;
  amount: string;
}

const cents = (order: Order): number => Math.round(Number(order.amount) * 100);

export default function customerTotals(params: JobParams): JobDefinition {
  const url = typeof params.postgres === 'string' ? params.postgres : 'postgres://postgres@127.0.0.1:5432/test';
  const maxId = numberParam(params, 'maxId', 1_000_000);
  const job = new JobBuilder('customer-totals');
  job
    // Ids below 1 (and NULLs) go to the first range, above maxId to the last: every row is read once.
    .readPostgres<Order>({ url, query: 'SELECT id, customer, amount FROM orders', partitionColumn: 'id', lowerBound: 1, upperBound: maxId, partitions: 8 })
    .name('orders')
    .keyBy((order) => order.customer)
    .combine({
      create: (order) => ({ orders: 1, cents: cents(order) }),
      merge: (total, order) => ({ orders: total.orders + 1, cents: total.cents + cents(order) }),
      mergeCombiners: (a, b) => ({ orders: a.orders + b.orders, cents: a.cents + b.cents }),
    })
    .map(([customer, total]) => ({ customer, orders: total.orders, total: (total.cents / 100).toFixed(2) }))
    .name('totals')
    .writePostgres({ url, table: 'customer_totals', columns: ['customer', 'orders', 'total'], upsertKey: 'customer' });
  return job.build();
}

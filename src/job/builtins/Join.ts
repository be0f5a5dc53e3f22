import type { JobDefinition } from '../JobDefinition.js';
import { JobBuilder } from '../api/JobBuilder.js';
import { numberParam, requireString } from '../Params.js';

export type Customer = [id: number, name: string];
export type Order = [customerId: number, amount: number];
export type Joined = [id: number, name: string, amount: number];

/** Customers 0..n-1; customer i is named c<i>. */
export function* customers(n: number, subtask = 0, parallelism = 1): Generator<Customer> {
  for (let i = subtask; i < n; i += parallelism) yield [i, `c${i}`];
}

/** Orders; order j (its amount is j) belongs to customer orderCustomer(j). */
export function* orders(count: number, customerCount: number, subtask = 0, parallelism = 1): Generator<Order> {
  for (let j = subtask; j < count; j += parallelism) yield [orderCustomer(j, customerCount), j];
}

/** The customer of order j: (j * 7919) mod (n + n/4), so some orders match no customer. */
export function orderCustomer(j: number, customerCount: number): number {
  return (j * 7919) % (customerCount + Math.ceil(customerCount / 4));
}

/**
 * Hash join of customers (the build side) and orders on the customer id: [id, name,
 * amount] for every match, collected, or written to `output` (one JSON array a line).
 */
export function join(params: Record<string, unknown>): JobDefinition {
  const customerCount = Math.floor(numberParam(params, 'customers', 10_000, 1));
  const orderCount = Math.floor(numberParam(params, 'orders', 100_000));
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const job = new JobBuilder('join');
  const byCustomer = job
    .generate((i, n) => customers(customerCount, i, n))
    .name('customers')
    .keyBy((c) => c[0]);
  const byOrder = job
    .generate((i, n) => orders(orderCount, customerCount, i, n))
    .name('orders')
    .keyBy((o) => o[0]);
  const joined = byCustomer.join(byOrder, (c, o): Joined => [c[0], c[1], o[1]]).name('join');
  if (output === undefined) joined.collect();
  else joined.writeText(output);
  return job.build();
}

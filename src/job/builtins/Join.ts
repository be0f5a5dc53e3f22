import type { JobDefinition } from '../JobDefinition.js';
import { JobBuilder } from '../api/JobBuilder.js';
import { numberParam } from './Params.js';

export type Customer = [id: number, name: string];
export type Order = [customerId: number, amount: number];
export type Joined = [id: number, name: string, amount: number];

/** Customers 0..n-1; customer i is named c<i>. */
export function* customers(n: number, subtask = 0, parallelism = 1): Generator<Customer> {
  for (let i = subtask; i < n; i += parallelism) yield [i, `c${i}`];
}

/** Orders; order j belongs to customer (j * 7919) mod (n + n/4), so some match no customer. */
export function* orders(count: number, customerCount: number, subtask = 0, parallelism = 1): Generator<Order> {
  const span = customerCount + Math.ceil(customerCount / 4);
  for (let j = subtask; j < count; j += parallelism) yield [(j * 7919) % span, j];
}

/** Hash join of customers and orders on the customer id: [id, name, amount] for every match. */
export function join(params: Record<string, unknown>): JobDefinition {
  const customerCount = Math.floor(numberParam(params, 'customers', 10_000, 1));
  const orderCount = Math.floor(numberParam(params, 'orders', 100_000));
  const job = new JobBuilder('join');
  const byCustomer = job
    .generate((i, n) => customers(customerCount, i, n))
    .name('customers')
    .keyBy((c) => c[0]);
  const byOrder = job
    .generate((i, n) => orders(orderCount, customerCount, i, n))
    .name('orders')
    .keyBy((o) => o[0]);
  byCustomer
    .join(byOrder, (c, o): Joined => [c[0], c[1], o[1]])
    .name('join')
    .collect();
  return job.build();
}

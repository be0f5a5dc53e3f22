import type { JobDefinition } from '../JobDefinition.js';
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
  return {
    name: 'join',
    stages: [
      { name: 'customers', source: { generate: (i, n) => customers(customerCount, i, n) } },
      { name: 'orders', source: { generate: (i, n) => orders(orderCount, customerCount, i, n) } },
      {
        name: 'join',
        inputs: [
          { from: 'customers', partitioning: { type: 'hash', key: (r) => (r as Customer)[0] } },
          { from: 'orders', partitioning: { type: 'hash', key: (r) => (r as Order)[0] } },
        ],
        operators: [
          {
            join: {
              keys: [(r) => (r as Customer)[0], (r) => (r as Order)[0]],
              combine: (c, o) => [(c as Customer)[0], (c as Customer)[1], (o as Order)[1]],
            },
          },
        ],
        sink: { collect: true },
      },
    ],
  };
}

/** Orders keys, for range partitioning and sorting alike: numbers by value, strings by code units. */
export type KeyComparator = (a: unknown, b: unknown) => number;

export const naturalOrder: KeyComparator = (a, b) => {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

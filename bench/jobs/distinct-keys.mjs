// Keyed aggregation over many distinct keys (bench/managed.ts uploads this module).
// Record i is [i mod keys, 1]; they are hash-shuffled and summed by key with reduceByKey,
// and written to `output`: key k's count is how many i < records have i mod keys = k.
// Params: records, keys, output.
function number(params, name) {
  const value = Number(params[name]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`parameter "${name}" must be a positive integer`);
  return value;
}

export default (params) => {
  const records = number(params, 'records');
  const keys = number(params, 'keys');
  return {
    name: 'distinct-keys',
    stages: [
      {
        name: 'generate',
        source: {
          generate: function* (subtask, parallelism) {
            for (let i = subtask; i < records; i += parallelism) yield [i % keys, 1];
          },
        },
      },
      {
        name: 'sum',
        inputs: [{ from: 'generate', partitioning: { type: 'hash', key: (r) => r[0] } }],
        operators: [{ reduceByKey: { key: (r) => r[0], reduce: (a, b) => [a[0], a[1] + b[1]] } }],
        sink: { text: params.output },
      },
    ],
  };
};

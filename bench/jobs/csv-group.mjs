// `WHERE x > threshold GROUP BY a, b` with COUNT(*), SUM(n) (an integer) and SUM(d) (a double)
// over a CSV with a header (bench/sections/CsvParsers.ts uploads this module): what
// `readCsv(input, { header: true, columns }).filter(...).combineByKey(...)` builds.
// Params: input (a file, folder or glob), threshold. Results: [[a, b], [count, sumN, sumD]].
export default (params) => {
  const threshold = Number(params.threshold);
  const key = (r) => `${r.a}\u0000${r.b}`;
  return {
    name: 'csv-filter-group',
    stages: [
      {
        name: 'read',
        source: { kind: 'csv', path: params.input, header: true, columns: { a: 'string', b: 'number', x: 'number', n: 'number', d: 'number' } },
        operators: [{ kind: 'filter', filter: (r) => r.x > threshold }],
      },
      {
        name: 'group',
        inputs: [{ from: 'read', partitioning: { type: 'hash', key } }],
        operators: [
          {
            kind: 'combineByKey',
            combineByKey: {
              key,
              create: (r) => [1, r.n, r.d],
              merge: (c, r) => {
                c[0] += 1;
                c[1] += r.n;
                c[2] += r.d;
                return c;
              },
              mergeCombiners: (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]],
            },
          },
        ],
        sink: { kind: 'collect' },
      },
    ],
  };
};

// Counts records by one field (bench/sections/Connectors.ts uploads this module).
// Params: format (jsonLines | csv | parquet), input (a file, folder or glob), field.
// The read stage parses the input in the tasks it is split across and counts map-side
// (combineByKey), so only one count per key and task crosses the hash exchange.
export default (params) => {
  const field = params.field;
  const sources = {
    jsonLines: { kind: 'jsonLines', path: params.input },
    csv: { kind: 'csv', path: params.input, header: true },
    parquet: { kind: 'parquet', path: params.input, columns: [field] },
  };
  const source = sources[params.format];
  if (source === undefined) throw new Error(`format must be one of ${Object.keys(sources).join(', ')}, not ${params.format}`);
  const key = (record) => record[field];
  return {
    name: `count-by-${field}-${params.format}`,
    stages: [
      { name: 'read', source },
      {
        name: 'count',
        inputs: [{ from: 'read', partitioning: { type: 'hash', key } }],
        operators: [{ kind: 'combineByKey', combineByKey: { key, create: () => 1, merge: (n) => n + 1, mergeCombiners: (a, b) => a + b } }],
        sink: { kind: 'collect' },
      },
    ],
  };
};

// A word count written as a user's job module: submit it with
//   npx spillway submit examples/wordcount.mjs --param input=corpus/ --wait
// The default export is a function of the submitted params that returns the job.

/** @param {{ input: string, output?: string }} params */
export default function wordCount(params) {
  return {
    name: 'wordcount-example',
    stages: [
      {
        name: 'tokenize',
        source: { text: params.input },
        // Words are found first, then lower-cased: lower-casing the line first would split a word at a letter
        // whose lower case is not a letter alone (İ becomes i and a combining dot).
        operators: [{ flatMap: (line) => (line.match(/[\p{L}\p{N}']+/gu) ?? []).map((word) => [word.toLowerCase(), 1]) }],
      },
      {
        name: 'count',
        inputs: [{ from: 'tokenize', partitioning: { type: 'hash', key: (record) => record[0] } }],
        // A keyed reduce is also applied before the exchange (map-side combine).
        operators: [{ reduceByKey: { key: (record) => record[0], reduce: (a, b) => [a[0], a[1] + b[1]] } }],
        sink: params.output ? { text: params.output } : { collect: true },
      },
    ],
  };
}

// How many words of each length a text holds, ignoring words of one letter:
//   npx spillway submit examples/word-lengths.mjs --param input=corpus/ --wait
// Shows filter, map, a keyed reduce, and a sort by key before a collect sink.

/** @param {{ input: string }} params */
export default function wordLengths(params) {
  return {
    name: 'word-lengths',
    stages: [
      {
        name: 'words',
        source: { text: params.input },
        operators: [
          { flatMap: (line) => line.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [] },
          { filter: (word) => word.length > 1 },
          { map: (word) => [word.length, 1] },
        ],
      },
      {
        name: 'histogram',
        inputs: [{ from: 'words', partitioning: { type: 'hash', key: (record) => record[0] } }],
        operators: [
          { reduceByKey: { key: (record) => record[0], reduce: (a, b) => [a[0], a[1] + b[1]] } },
          { sortBy: { key: (record) => record[0] } },
        ],
        sink: { collect: true },
      },
    ],
  };
}

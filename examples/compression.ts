// Word counts of text that may be compressed, written compressed:
//   npx spillway submit examples/compression.ts --param input=logs/ --param output=counts/ --wait
//   npx spillway submit examples/compression.ts --param input=logs/ --param output=counts/ --param codec=gzip --wait
// Input files ending in .gz or .zst are decompressed as a stream, each read whole by one task (plain files are
// split in byte ranges). Each task writes counts/part-NNNNN.zst (or .gz): `word<TAB>count` lines in independent
// zstd frames (gzip members) of 1 MiB, which any zstd (gzip) reader reads as one stream.
import { JobBuilder, requireString, type Compression, type JobDefinition, type JobParams } from 'spillway';

const WORD = /[\p{L}\p{N}']+/gu;

export default function compressedWordCount(params: JobParams): JobDefinition {
  const codec = params.codec ?? 'zstd';
  if (codec !== 'zstd' && codec !== 'gzip') throw new TypeError(`codec must be zstd or gzip, not ${String(codec)}`);
  const job = new JobBuilder('compressed-word-count');
  job
    .readText(requireString(params, 'input'))
    .flatMap<string>((line, emit) => {
      for (const [word] of line.matchAll(WORD)) emit(word.toLowerCase());
    })
    .keyBy((word) => word)
    .combine({ create: () => 1, merge: (n) => n + 1, mergeCombiners: (a, b) => a + b })
    .writeText(requireString(params, 'output'), { compression: codec as Compression });
  return job.build();
}

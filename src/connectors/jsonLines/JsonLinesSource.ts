import { compressionOfFile } from '../compression/Compression.js';
import { MalformedInputError, newlinesIn, onErrorProblem, type OnError } from '../MalformedInput.js';
import { forEachSplit, type SourceSpec } from '../SourceSpec.js';
import { ByteRangeSupply, listInputFiles, readLines, resumeTextSplit, type TextSplit } from '../text/TextSplits.js';

/**
 * JSON Lines: one record a line (JSON.parse), split across the subtasks as text is.
 * A line that does not parse fails the job with SPW_ERR_MALFORMED_INPUT naming the
 * file and the line (1-based, from the file's start), or with `onError: 'skip'` is
 * skipped and counted in the task's `malformedRecords`. Empty lines are skipped.
 */
export type JsonLinesSourceDefinition = { kind: 'jsonLines'; path: string; onError?: OnError };

/**
 * `{ kind: 'jsonLines', path, onError? }`: a record a line, JSON.parse'd, of a file, a
 * folder of them or a glob (`.gz` and `.zst` files decompressed, each one split),
 * in the byte ranges text is read in: a line belongs to the split it starts in. Empty
 * lines are skipped. A line that does not parse fails the job with
 * SPW_ERR_MALFORMED_INPUT naming the file and its line number, counted from the file's
 * start (the newlines before the split are counted only then); with `onError: 'skip'`
 * it is skipped and counted in the task's `malformedRecords`. A checkpoint resumes a
 * split at a line, as text's do (a compressed file only at its start).
 */
export const JSON_LINES_SOURCE: SourceSpec<JsonLinesSourceDefinition> = {
  kind: 'jsonLines',
  validate: (source) => (typeof source.path === 'string' && source.path !== '' ? onErrorProblem(source.onError) : 'needs a path'),
  bounded: () => true,
  check: (source) => void listInputFiles(source.path),
  splits: (source, parallelism) => new ByteRangeSupply(source.path, parallelism),
  read(source, context) {
    const skip = source.onError === 'skip';
    return forEachSplit(
      context,
      async (split: TextSplit, at) => {
        let index = 0;
        await readLines(
          split,
          (line) => {
        const at = index++;
        if (line.length === 0 || line === '\r') return;
        let record: unknown;
        try {
          record = JSON.parse(line);
        } catch (error) {
          if (!skip) throw new MalformedInputError(split.file, { line: firstLine(split) + at }, `not a JSON line: ${(error as Error).message}`);
          context.malformed();
          return;
        }
        return context.push(record);
          },
          undefined,
          at,
        );
        context.read(split.end - split.start);
      },
      resumeTextSplit,
    );
  },
  resume: resumeTextSplit,
};

/**
 * The line number of a split's first line: 1 at a file's start (and for a compressed
 * file, read whole); else the line after the one in progress at `start - 1`.
 */
function firstLine(split: TextSplit): number {
  if (split.start === 0 || compressionOfFile(split.file) !== undefined) return 1;
  return newlinesIn(split.file, 0, split.start - 1) + 2;
}

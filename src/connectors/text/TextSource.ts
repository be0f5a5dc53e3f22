import { forEachSplit, type SourceSpec } from '../SourceSpec.js';
import { FolderMonitor } from './FolderMonitor.js';
import { ByteRangeSupply, listInputFiles, readChunks, readLines, type TextSplit } from './TextSplits.js';

/**
 * Lines of a text file, a folder of them or a glob, in byte ranges the JobManager
 * hands to the subtasks as they ask (SplitAssigner): each line a string, or with
 * `chunks: true` the undecoded UTF-8 bytes of whole lines, a Buffer of about 64 KiB
 * at a time (for byte-level work such as counting words; each line still belongs to
 * exactly one subtask). With
 * `reuse: true` the chunks share one buffer, each valid only until the operator
 * chain is done with it (Flink's object reuse): for operators that keep nothing of
 * a chunk, it saves faulting in fresh memory for every megabyte read. With
 * `monitor: ms` the path is a folder watched every `ms` for new files (each read once,
 * whole, in the order they appear; names starting with `.` are not read), and the
 * source never ends.
 */
export type TextSourceDefinition = { kind: 'text'; text: string; chunks?: boolean; reuse?: boolean; monitor?: number };

/**
 * `{ kind: 'text', text: path }`: lines of a file, a folder of them or a glob, in byte
 * ranges the JobManager hands out as the subtasks ask; `chunks: true` gives undecoded
 * runs of whole lines instead. With `monitor: ms` the folder is watched: every file that
 * appears in it is read once, whole, in the order they appear, and the source never ends.
 */
export const TEXT_SOURCE: SourceSpec<TextSourceDefinition> = {
  kind: 'text',
  validate(source) {
    if (typeof source.text !== 'string' || source.text === '') return 'needs a path, text';
    for (const flag of ['chunks', 'reuse'] as const) {
      const value = source[flag];
      if (value !== undefined && typeof value !== 'boolean') return `${flag} must be true or false, not ${JSON.stringify(value)}`;
    }
    if (source.reuse === true && source.chunks !== true) return 'reuse applies to chunks only; set chunks: true';
    if (source.monitor !== undefined && !(typeof source.monitor === 'number' && source.monitor > 0)) {
      return `monitor must be a positive number of ms, not ${JSON.stringify(source.monitor)}`;
    }
    return undefined;
  },
  bounded: (source) => source.monitor === undefined,
  check(source) {
    if (source.monitor === undefined) listInputFiles(source.text);
    else FolderMonitor.check(source.text);
  },
  splits: (source, parallelism) => (source.monitor === undefined ? new ByteRangeSupply(source.text, parallelism) : new FolderMonitor(source.text)),
  read(source, context) {
    const read = async (split: TextSplit, at: (offset: number) => void | Promise<void>): Promise<void> => {
      if (source.chunks) await readChunks(split, (chunk) => context.push(chunk), { reuse: source.reuse, at });
      else await readLines(split, (line) => context.push(line), undefined, at);
      // The split's bytes (a compressed file's, as stored), once read.
      context.read(split.end - split.start);
    };
    return forEachSplit(context, read, resumeAt, source.monitor);
  },
  resume: (split, position) => resumeAt(split as TextSplit, position),
};

/** What is left of a split from a line's offset: the lines that start there or later. */
function resumeAt(split: TextSplit, offset: unknown): TextSplit {
  return { ...split, start: offset as number };
}

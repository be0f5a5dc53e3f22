import { compressionProblem, extensionOf, type Compression } from '../compression/Compression.js';
import { openLineSink } from '../LineFiles.js';
import { abortPartFiles, commitPartFiles } from '../PartFiles.js';
import type { SinkSpec } from '../SinkSpec.js';

/**
 * One file per subtask, part-00000...; [key, value] records as key<TAB>value; compressed,
 * part-00000.gz or .zst. With checkpoints, exactly once: a file per checkpoint,
 * part-00000-<job>-<checkpoint>, visible once the checkpoint completes (so for every file sink).
 */
export type TextSinkDefinition = { kind: 'text'; text: string; compression?: Compression };

const WHAT = 'the text sink';

/** A record as a line of text: `key<TAB>value` for a pair, JSON for anything else. */
export function textLine(record: unknown): string {
  return (Array.isArray(record) && record.length === 2 ? `${record[0]}\t${record[1]}` : JSON.stringify(record)) + '\n';
}

/**
 * `{ kind: 'text', text: folder, compression? }`: a file per subtask, written aside by
 * each attempt and renamed to `part-NNNNN` when the job finishes; with checkpoints, a
 * file per checkpoint too, renamed when it completes (PartFiles.ts); compressed,
 * `part-NNNNN.gz` or `.zst`.
 */
export const TEXT_SINK: SinkSpec<TextSinkDefinition> = {
  kind: 'text',
  validate: (sink) => (typeof sink.text === 'string' && sink.text !== '' ? compressionProblem(sink.compression) : 'needs a folder, text'),
  open: (sink, context) => openLineSink(sink.text, context, { what: WHAT, format: textLine, compression: sink.compression }),
  commit: (sink, jobId, attempts) => commitPartFiles(WHAT, sink.text, jobId, attempts, extensionOf(sink.compression)),
  abort: (sink, jobId) => abortPartFiles(sink.text, jobId),
};

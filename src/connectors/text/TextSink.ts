import type { SinkOf } from '../../job/JobDefinition.js';
import { compressionProblem, extensionOf } from '../compression/Compression.js';
import { openLineSink } from '../LineFiles.js';
import { abortPartFiles, commitPartFiles } from '../PartFiles.js';
import type { SinkSpec } from '../SinkSpec.js';

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
export const TEXT_SINK: SinkSpec<SinkOf<'text'>> = {
  kind: 'text',
  validate: (sink) => (typeof sink.text === 'string' && sink.text !== '' ? compressionProblem(sink.compression) : 'needs a folder, text'),
  open: (sink, context) => openLineSink(sink.text, context, { what: WHAT, format: textLine, compression: sink.compression }),
  commit: (sink, jobId, attempts) => commitPartFiles(WHAT, sink.text, jobId, attempts, extensionOf(sink.compression)),
  abort: (sink, jobId) => abortPartFiles(sink.text, jobId),
};

import { SpillwayError } from '../../errors/Errors.js';
import { compressionProblem, extensionOf, type Compression } from '../compression/Compression.js';
import { openLineSink } from '../LineFiles.js';
import { abortPartFiles, commitPartFiles } from '../PartFiles.js';
import type { SinkSpec } from '../SinkSpec.js';

/** One file per subtask, a record a line as JSON.stringify writes it; compressed, part-00000.gz or .zst. */
export type JsonLinesSinkDefinition = { kind: 'jsonLines'; path: string; compression?: Compression };

const WHAT = 'the JSON Lines sink';

/**
 * A record as one JSON line, as JSON.stringify writes it (a Date as its ISO string,
 * undefined as null); a bigint, which JSON has no form for, as a number where it is
 * exact and as a string where it is not.
 */
export function jsonLine(record: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(record);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    try {
      json = JSON.stringify(record, bigintsAsNumbers);
    } catch (again) {
      throw new SpillwayError('SPW_ERR_USER_CODE', `${WHAT} cannot write a record as JSON: ${(again as Error).message}`, { cause: again });
    }
  }
  return (json ?? 'null') + '\n';
}

function bigintsAsNumbers(_key: string, value: unknown): unknown {
  if (typeof value !== 'bigint') return value;
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
}

/** `{ kind: 'jsonLines', path: folder, compression? }`: a file per subtask (`part-NNNNN`, `.gz` or `.zst` compressed), committed as the text sink's are. */
export const JSON_LINES_SINK: SinkSpec<JsonLinesSinkDefinition> = {
  kind: 'jsonLines',
  validate: (sink) => (typeof sink.path === 'string' && sink.path !== '' ? compressionProblem(sink.compression) : 'needs a folder, path'),
  open: (sink, context) => openLineSink(sink.path, context, { what: WHAT, format: jsonLine, compression: sink.compression }),
  commit: (sink, jobId, attempts) => commitPartFiles(WHAT, sink.path, jobId, attempts, extensionOf(sink.compression)),
  abort: (sink, jobId) => abortPartFiles(sink.path, jobId),
};

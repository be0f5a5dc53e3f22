import type Papa from 'papaparse';
import { openLineSink, type LineFormat } from '../LineFiles.js';
import { abortPartFiles, commitPartFiles } from '../PartFiles.js';
import type { SinkSpec } from '../SinkSpec.js';
import { characterProblem } from './CsvOptions.js';
import { DEFAULT_DELIMITER } from './CsvSplits.js';

/** One file per subtask, RFC 4180 CSV: object records by `columns` (default: the first record's keys), arrays as they are. */
export type CsvSinkDefinition = { kind: 'csv'; path: string; header?: boolean; columns?: string[]; delimiter?: string };

type CsvSink = CsvSinkDefinition;

const WHAT = 'the CSV sink';

/** A value as a CSV field's text: null and undefined empty, booleans `true`/`false`, a Date as ISO 8601, an object or array as JSON. */
function fieldText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value);
}

/**
 * How records become CSV lines (papaparse's unparse: a field is quoted where it holds
 * the delimiter, a quote, a newline or edge spaces, its quotes doubled): an array
 * record as its fields, an object by `columns` (by default its first record's keys).
 */
function csvLines(sink: CsvSink, papa: typeof Papa): LineFormat {
  const config: Papa.UnparseConfig = { delimiter: sink.delimiter ?? DEFAULT_DELIMITER, newline: '\n', header: false, quotes: false };
  let columns = sink.columns;
  const line = (fields: unknown[]): string => papa.unparse([fields.map(fieldText)], config) + '\n';
  const isObject = (record: unknown): record is Record<string, unknown> => record !== null && typeof record === 'object' && !Array.isArray(record) && !(record instanceof Date);
  return {
    what: WHAT,
    format(record) {
      if (Array.isArray(record)) return line(record);
      if (!isObject(record)) return line([record]);
      columns ??= Object.keys(record);
      return line(columns.map((column) => record[column]));
    },
    first(record) {
      if (sink.header !== true) return '';
      columns ??= isObject(record) ? Object.keys(record) : undefined;
      return columns === undefined ? '' : line(columns);
    },
  };
}

/** `{ kind: 'csv', path: folder, header?, columns?, delimiter? }`: a CSV file per subtask (`part-NNNNN`), committed as the text sink's are. */
export const CSV_SINK: SinkSpec<CsvSink> = {
  kind: 'csv',
  validate(sink) {
    if (typeof sink.path !== 'string' || sink.path === '') return 'needs a folder, path';
    if (sink.header !== undefined && typeof sink.header !== 'boolean') return `header must be true or false, not ${JSON.stringify(sink.header)}`;
    if (sink.columns !== undefined && !(Array.isArray(sink.columns) && sink.columns.every((c) => typeof c === 'string'))) {
      return `columns must be a list of column names, not ${JSON.stringify(sink.columns)}`;
    }
    return characterProblem('delimiter', sink.delimiter);
  },
  // papaparse is imported when a CSV sink first opens: a task thread that writes none never loads it.
  open: async (sink, context) => openLineSink(sink.path, context, csvLines(sink, (await import('papaparse')).default)),
  commit: (sink, jobId, attempts) => commitPartFiles(WHAT, sink.path, jobId, attempts),
  abort: (sink, jobId) => abortPartFiles(sink.path, jobId),
};

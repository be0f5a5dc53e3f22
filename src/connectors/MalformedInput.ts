import fs from 'node:fs';
import { SpillwayError } from '../errors/Errors.js';

/** Where in a file malformed input was found: a line (1-based, from the start of the file), a row group (from 0), or a byte offset (from 0). */
export interface InputPosition {
  line?: number;
  rowGroup?: number;
  /** Of the file as stored: for a compressed file, of its compressed bytes. */
  byteOffset?: number;
}

/** What a source does with a record it cannot read: fail the job (the default), or skip it and count it in the task's `malformedRecords`. */
export type OnError = 'fail' | 'skip';

/**
 * Input that does not parse (SPW_ERR_MALFORMED_INPUT): a bad JSON line, an unterminated
 * CSV quote, a truncated Parquet file, a corrupt gzip member. Its message starts with
 * the file and the position (`data.jsonl:17: ...`, `t.parquet: row group 2: ...`,
 * `x.gz: at byte 1234: ...`), which cross threads and processes with the code; the
 * fields are there for whoever catches it in the same thread.
 */
export class MalformedInputError extends SpillwayError {
  constructor(
    readonly file: string,
    readonly position: InputPosition,
    what: string,
  ) {
    super('SPW_ERR_MALFORMED_INPUT', `${file}${describe(position)}: ${what}`);
    this.name = 'MalformedInputError';
  }

  get line(): number | undefined {
    return this.position.line;
  }
}

function describe({ line, rowGroup, byteOffset }: InputPosition): string {
  if (line !== undefined) return `:${line}`;
  if (rowGroup !== undefined) return `: row group ${rowGroup}`;
  if (byteOffset !== undefined) return `: at byte ${byteOffset}`;
  return '';
}

/** Validates an `onError` field: the end of a sentence saying what is wrong, or undefined. */
export function onErrorProblem(value: unknown): string | undefined {
  return value === undefined || value === 'fail' || value === 'skip' ? undefined : `onError must be 'fail' or 'skip', not ${JSON.stringify(value)}`;
}

const NEWLINE = 0x0a;
const COUNT_CHUNK = 1 << 20;

/**
 * The newlines in bytes [from, to) of a file: what a line number is counted from. Read
 * only when an error names a line, so a split's reader counts nothing while all is well.
 */
export function newlinesIn(file: string, from: number, to: number): number {
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.allocUnsafe(COUNT_CHUNK);
    let count = 0;
    for (let position = from; position < to; ) {
      const read = fs.readSync(fd, buffer, 0, Math.min(COUNT_CHUNK, to - position), position);
      if (read === 0) break;
      for (let i = buffer.indexOf(NEWLINE, 0); i >= 0 && i < read; i = buffer.indexOf(NEWLINE, i + 1)) count++;
      position += read;
    }
    return count;
  } finally {
    fs.closeSync(fd);
  }
}

/** The line (1-based) that byte `offset` of a file is on. */
export function lineAt(file: string, offset: number): number {
  return newlinesIn(file, 0, offset) + 1;
}

/** Newlines in data[from, to). */
export function countNewlines(data: Uint8Array, from = 0, to = data.length): number {
  let count = 0;
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.length);
  for (let i = bytes.indexOf(NEWLINE, from); i >= 0 && i < to; i = bytes.indexOf(NEWLINE, i + 1)) count++;
  return count;
}

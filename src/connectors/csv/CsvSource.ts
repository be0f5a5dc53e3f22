import fs from 'node:fs';
import type Papa from 'papaparse';
import { SpillwayError } from '../../errors/Errors.js';
import type { SourceOf } from '../../job/JobDefinition.js';
import { MalformedInputError, onErrorProblem } from '../MalformedInput.js';
import { forEachSplit, type SourceContext, type SourceSpec } from '../SourceSpec.js';
import { ByteRangeSupply, listInputFiles, resumeTextSplit, type Resumable, type TextSplit } from '../text/TextSplits.js';
import { characterProblem, columnTypesProblem, type CsvColumnType, type CsvColumnTypes } from './CsvOptions.js';
import { DEFAULT_DELIMITER, DEFAULT_QUOTE, decodeText, QuoteParityAligner, readRecordChunks, type RecordChunk } from './CsvSplits.js';

type CsvSource = SourceOf<'csv'>;

/** Records between two turns of the task thread's event loop. */
const RECORDS_PER_TURN = 4096;
/** How far into a file its header (first record) is looked for. */
const HEADER_BYTES = 1 << 20;

/**
 * `{ kind: 'csv', path, header?, columns?, delimiter?, quote?, onError? }`: RFC 4180 CSV
 * of a file, a folder of them or a glob (`.gz`, `.zst` decompressed, each one split),
 * parsed with papaparse. The JobManager cuts the files at record boundaries
 * (CsvSplits.ts: quote parity), so a quoted field may hold delimiters, doubled quotes
 * and newlines across any split boundary. With `header`, every split of a file reads
 * the file's first record for the names. A record that does not fit (a typed field
 * that does not convert, another field count than the header's) fails the job with
 * SPW_ERR_MALFORMED_INPUT naming the file and line, or with `onError: 'skip'` is
 * counted and skipped; an unterminated quote always fails. Empty lines are skipped.
 */
export const CSV_SOURCE: SourceSpec<CsvSource> = {
  kind: 'csv',
  validate(source) {
    if (typeof source.path !== 'string' || source.path === '') return 'needs a path';
    if (source.header !== undefined && typeof source.header !== 'boolean') return `header must be true or false, not ${JSON.stringify(source.header)}`;
    const problem =
      characterProblem('delimiter', source.delimiter) ?? characterProblem('quote', source.quote) ?? columnTypesProblem(source.columns) ?? onErrorProblem(source.onError);
    if (problem !== undefined) return problem;
    if ((source.delimiter ?? DEFAULT_DELIMITER) === (source.quote ?? DEFAULT_QUOTE)) return 'delimiter and quote must differ';
    if (source.header !== true && source.columns !== undefined) {
      const named = Object.keys(source.columns).find((key) => !/^\d+$/.test(key));
      if (named !== undefined) return `without a header, columns are typed by index ({ 0: 'number' }), not by name ${JSON.stringify(named)}`;
    }
    return undefined;
  },
  bounded: () => true,
  check: (source) => void listInputFiles(source.path),
  splits: (source, parallelism) => new ByteRangeSupply(source.path, parallelism, new QuoteParityAligner(source.quote ?? DEFAULT_QUOTE)),
  async read(source, context) {
    const reader = new CsvReader(source, context, (await import('papaparse')).default);
    return forEachSplit(context, (split: TextSplit, at) => reader.read(split, at), resumeTextSplit);
  },
  // A checkpoint resumes a split at a run of whole records (a compressed file only at its start).
  resume: resumeTextSplit,
};

/** A field's text as its column's type: undefined where it does not convert. */
function convert(type: CsvColumnType, text: string): string | number | boolean | null | undefined {
  if (type === 'string') return text;
  if (text === '') return null;
  if (type === 'number') {
    const value = Number(text);
    return Number.isNaN(value) && text.trim() !== 'NaN' ? undefined : value;
  }
  const lower = text.trim().toLowerCase();
  if (lower === 'true' || lower === '1') return true;
  if (lower === 'false' || lower === '0') return false;
  return undefined;
}

/** A record that does not fit, and why. */
class BadRecord {
  constructor(readonly why: string) {}
}

/** Reads one source's splits in one task: its parse options, and each file's header once. */
class CsvReader {
  private readonly options: Papa.ParseConfig;
  private readonly quote: string;
  private readonly headers = new Map<string, string[]>();

  constructor(
    private readonly source: CsvSource,
    private readonly context: SourceContext,
    /** papaparse, imported when a CSV source first reads: a task thread that reads none never loads it. */
    private readonly papa: typeof Papa,
  ) {
    this.quote = source.quote ?? DEFAULT_QUOTE;
    this.options = { delimiter: source.delimiter ?? DEFAULT_DELIMITER, quoteChar: this.quote, escapeChar: this.quote, skipEmptyLines: true };
  }

  async read(split: TextSplit, at: Resumable): Promise<void> {
    let count = 0;
    await readRecordChunks(split, this.quote, at, async (chunk) => {
      const text = decodeText(chunk.data, chunk.start, chunk.end);
      const parsed = this.papa.parse<string[]>(text, this.options);
      const quoteError = parsed.errors.find((e) => e.type === 'Quotes');
      if (quoteError !== undefined) this.fail(split, chunk, text, quoteError.row ?? 0, `a quoted field is malformed (${quoteError.message})`);
      const rows = parsed.data;
      let from = 0;
      let names: string[] | undefined;
      if (this.source.header === true) {
        if (chunk.first) {
          names = rows[0] ?? [];
          this.headers.set(split.file, names);
          from = 1;
        } else names = this.headerOf(split);
      }
      const toRecord = this.converter(names);
      for (let r = from; r < rows.length; r++) {
        const record = toRecord(rows[r]);
        if (record instanceof BadRecord) {
          if (this.source.onError !== 'skip') this.fail(split, chunk, text, r, record.why);
          this.context.malformed();
          continue;
        }
        const waiting = this.context.push(record);
        if (waiting) await waiting;
        if (++count % RECORDS_PER_TURN === 0) await this.context.pause();
      }
    });
  }

  /** Throws SPW_ERR_MALFORMED_INPUT naming the line that row `row` of the chunk starts on. */
  private fail(split: TextSplit, chunk: RecordChunk, text: string, row: number, why: string): never {
    // The rows before it, parsed again to find where it starts: only now, as it is rare.
    const cursor = row === 0 ? 0 : this.papa.parse(text, { ...this.options, preview: row }).meta.cursor;
    const bytes = Buffer.byteLength(text.slice(0, cursor));
    let index = chunk.start + bytes;
    // The cursor stands after a row's newline, or before the empty lines that follow it.
    while (index < chunk.end && (chunk.data[index] === 0x0a || chunk.data[index] === 0x0d)) index++;
    throw new MalformedInputError(split.file, { line: chunk.lineOf(index) }, why);
  }

  /** A file's header, for a split that does not start it: its first record. */
  private headerOf(split: TextSplit): string[] {
    const known = this.headers.get(split.file);
    if (known !== undefined) return known;
    const head = readHead(split.file, HEADER_BYTES);
    const names = this.papa.parse<string[]>(decodeText(head, 0, head.length), { ...this.options, preview: 1 }).data[0] ?? [];
    this.headers.set(split.file, names);
    return names;
  }

  /** Fields to a record: typed where `columns` says, an object by `names` or an array. */
  private converter(names: string[] | undefined): (fields: string[]) => unknown {
    const types: CsvColumnTypes = this.source.columns ?? {};
    if (names === undefined) {
      const typed = Object.entries(types).map(([index, type]) => [Number(index), type] as const);
      return (fields) => {
        for (const [index, type] of typed) {
          if (index >= fields.length) continue;
          const value = convert(type, fields[index]);
          if (value === undefined) return new BadRecord(`field ${index + 1}, ${JSON.stringify(fields[index])}, is not a ${type}`);
          (fields as unknown[])[index] = value;
        }
        return fields;
      };
    }
    const columnTypes = names.map((name) => (Object.hasOwn(types, name) ? types[name] : 'string'));
    return (fields) => {
      if (fields.length !== names.length) return new BadRecord(`the record has ${fields.length} fields and the header ${names.length}`);
      const record: Record<string, unknown> = {};
      for (let i = 0; i < names.length; i++) {
        const type = columnTypes[i];
        if (type === 'string') {
          record[names[i]] = fields[i];
          continue;
        }
        const value = convert(type, fields[i]);
        if (value === undefined) return new BadRecord(`column ${names[i]}, ${JSON.stringify(fields[i])}, is not a ${type}`);
        record[names[i]] = value;
      }
      return record;
    };
  }
}

/** The first `bytes` of a file (its header's record is in them). */
function readHead(file: string, bytes: number): Buffer {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    throw new SpillwayError('SPW_ERR_SOURCE_IO', `cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const buffer = Buffer.allocUnsafe(bytes);
    return buffer.subarray(0, fs.readSync(fd, buffer, 0, bytes, 0));
  } finally {
    fs.closeSync(fd);
  }
}

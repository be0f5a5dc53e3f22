import fs from 'node:fs';
import { isAscii } from 'node:buffer';
import { SpillwayError } from '../../errors/Errors.js';
import { MalformedInputError, onErrorProblem, type OnError } from '../MalformedInput.js';
import { forEachSplit, type SourceContext, type SourceSpec } from '../SourceSpec.js';
import { ByteRangeSupply, listInputFiles, resumeTextSplit, type Resumable, type TextSplit } from '../text/TextSplits.js';
import { CsvColumns } from './CsvColumns.js';
import { characterProblem, columnTypesProblem, type CsvColumnTypes } from './CsvOptions.js';
import { BadRecord, CsvRecords } from './CsvRecords.js';
import { CsvScanner } from './CsvScanner.js';
import { DEFAULT_DELIMITER, DEFAULT_QUOTE, QuoteParityAligner, readRecordChunks, type RecordChunk } from './CsvSplits.js';
import { FieldKind, type FieldKinds } from './FieldKind.js';

/**
 * CSV (RFC 4180: quoted fields may hold delimiters, doubled quotes and newlines),
 * split across the subtasks at record boundaries. With `header` a record is an
 * object keyed by the file's first record, else an array; fields are strings but
 * where `columns` types them (an empty typed field is null).
 */
export type CsvSourceDefinition = { kind: 'csv'; path: string; header?: boolean; columns?: CsvColumnTypes; delimiter?: string; quote?: string; onError?: OnError };

type CsvSource = CsvSourceDefinition;

/** Records between two turns of the task thread's event loop. */
const RECORDS_PER_TURN = 4096;
/** How far into a file its header (first record) is looked for. */
const HEADER_BYTES = 1 << 20;

/**
 * `{ kind: 'csv', path, header?, columns?, delimiter?, quote?, onError? }`: RFC 4180 CSV
 * of a file, a folder of them or a glob (`.gz`, `.zst` decompressed, each one split),
 * scanned from bytes into columns (CsvScanner.ts) and made into records at the source's
 * output (CsvRecords.ts). `columns` types and projects: a record holds only the columns
 * it names, and the scanner steps over the other fields without decoding them. The JobManager cuts the files at record boundaries
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
    const reader = new CsvReader(source, context);
    return forEachSplit(context, (split: TextSplit, at) => reader.read(split, at), resumeTextSplit);
  },
  // A checkpoint resumes a split at a run of whole records (a compressed file only at its start).
  resume: resumeTextSplit,
};

/** Reads one source's splits in one task: its scanner, a batch reused from chunk to chunk, and each file's header once. */
class CsvReader {
  private readonly quote: string;
  private readonly scanner: CsvScanner;
  private readonly batch = new CsvColumns();
  private readonly headers = new Map<string, string[]>();
  /** The records' maker for the names last seen (one per file with a header). */
  private records: CsvRecords | undefined;
  private recordsNames: string[] | undefined;

  constructor(
    private readonly source: CsvSource,
    private readonly context: SourceContext,
  ) {
    this.quote = source.quote ?? DEFAULT_QUOTE;
    this.scanner = new CsvScanner(source.delimiter ?? DEFAULT_DELIMITER, this.quote);
  }

  async read(split: TextSplit, at: Resumable): Promise<void> {
    let count = 0;
    const batch = this.batch;
    await readRecordChunks(split, this.quote, at, async (chunk) => {
      this.context.read(chunk.end - chunk.start);
      batch.reset(chunk.data, isAscii(chunk.data.subarray(chunk.start, chunk.end)));
      let from = chunk.start;
      let names: string[] | undefined;
      if (this.source.header === true) {
        if (chunk.first) {
          names = this.firstRecord(batch, from, chunk.end);
          this.headers.set(split.file, names);
          if (batch.error !== undefined) this.fail(split, chunk, batch.error.recordStart, batch.error.why);
          from = batch.end;
          batch.reset(chunk.data, batch.ascii);
        } else names = this.headerOf(split);
      }
      const records = this.recordsFor(names);
      if (records.missing !== undefined) throw new MalformedInputError(split.file, { line: 1 }, `the header has no column ${JSON.stringify(records.missing)}, which columns names`);
      this.scanner.scan(batch, from, chunk.end, records.kinds);
      if (batch.error !== undefined) this.fail(split, chunk, batch.error.recordStart, `a quoted field is malformed (${batch.error.why})`);
      for (let r = 0; r < batch.rows; r++) {
        const record = records.record(batch, r);
        if (record instanceof BadRecord) {
          if (this.source.onError !== 'skip') this.fail(split, chunk, batch.recordStarts[r], record.why);
          this.context.malformed();
          continue;
        }
        const waiting = this.context.push(record);
        if (waiting) await waiting;
        if (++count % RECORDS_PER_TURN === 0) await this.context.pause();
      }
    });
  }

  /** Throws SPW_ERR_MALFORMED_INPUT naming the line that the record at byte `recordStart` of the chunk starts on. */
  private fail(split: TextSplit, chunk: RecordChunk, recordStart: number, why: string): never {
    throw new MalformedInputError(split.file, { line: chunk.lineOf(recordStart) }, why);
  }

  /** The names in the first record of data[start, end) of the batch, all kept as text. */
  private firstRecord(batch: CsvColumns, start: number, end: number): string[] {
    this.scanner.scan(batch, start, end, ALL_TEXT, 1);
    if (batch.rows === 0) return [];
    return Array.from({ length: batch.fieldCounts[0] }, (_, i) => batch.text(i, 0, this.quote));
  }

  /** A file's header, for a split that does not start it: its first record. */
  private headerOf(split: TextSplit): string[] {
    const known = this.headers.get(split.file);
    if (known !== undefined) return known;
    const head = new CsvColumns();
    const bytes = readHead(split.file, HEADER_BYTES);
    head.reset(bytes, isAscii(bytes));
    const names = this.firstRecord(head, 0, bytes.length);
    this.headers.set(split.file, names);
    return names;
  }

  private recordsFor(names: string[] | undefined): CsvRecords {
    if (this.records === undefined || this.recordsNames !== names) {
      this.records = new CsvRecords(this.source.columns, names, this.quote);
      this.recordsNames = names;
    }
    return this.records;
  }
}

/** Every field kept as text: a header's names. */
const ALL_TEXT: FieldKinds = { byIndex: [], rest: FieldKind.Text };

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

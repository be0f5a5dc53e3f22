import { FieldKind } from './FieldKind.js';

/** What a number field held: a number, nothing (an empty field, read as null), or text that is not a number. */
export enum NumberStatus {
  Number = 0,
  Null = 1,
  NotANumber = 2,
}

const INITIAL_ROWS = 1024;

/**
 * One field index's values across a batch's rows, as the scanner left them: every kept
 * field as a byte range of the batch's data (a start below 0, `~start`, marks a quoted
 * field holding doubled quotes, made whole when read), and a number field also parsed.
 * Rows that have fewer fields than this column's index leave its entries unset.
 */
export class CsvColumn {
  starts: Int32Array;
  ends: Int32Array;
  /** Number fields only: the value, where `status` says Number. */
  values: Float64Array | undefined;
  status: Uint8Array | undefined;

  constructor(
    readonly kind: FieldKind.Text | FieldKind.Number,
    capacity: number,
  ) {
    this.starts = new Int32Array(capacity);
    this.ends = new Int32Array(capacity);
    if (kind === FieldKind.Number) {
      this.values = new Float64Array(capacity);
      this.status = new Uint8Array(capacity);
    }
  }

  grow(capacity: number): void {
    this.starts = copyInto(new Int32Array(capacity), this.starts);
    this.ends = copyInto(new Int32Array(capacity), this.ends);
    if (this.values !== undefined) this.values = copyInto(new Float64Array(capacity), this.values);
    if (this.status !== undefined) this.status = copyInto(new Uint8Array(capacity), this.status);
  }
}

function copyInto<T extends Int32Array | Float64Array | Uint8Array>(target: T, source: T): T {
  target.set(source);
  return target;
}

/** Why a scan stopped before its end, and the byte its record starts at (for the line an error names). */
export interface ScanError {
  recordStart: number;
  why: string;
}

/**
 * A batch of CSV records as columns over the bytes they came in: per row where its
 * record starts and how many fields it has, per field index a column (none for a
 * field the scanner was told to skip). Strings are made only when `text` reads one.
 * A batch is reused from one run of bytes to the next: `reset` keeps its arrays.
 */
export class CsvColumns {
  data: Buffer = Buffer.alloc(0);
  /** Whether data's bytes are all ASCII: a string decodes several times faster as Latin-1. */
  ascii = true;
  rows = 0;
  capacity = INITIAL_ROWS;
  recordStarts = new Int32Array(INITIAL_ROWS);
  fieldCounts = new Int32Array(INITIAL_ROWS);
  /** By field index; undefined where the field is skipped (or no row had it). */
  readonly columns: (CsvColumn | undefined)[] = [];
  /** The byte after the last record scanned. */
  end = 0;
  error: ScanError | undefined;

  /** Empties the batch for the records of `data`, keeping its arrays. */
  reset(data: Buffer, ascii: boolean): void {
    this.data = data;
    this.ascii = ascii;
    this.rows = 0;
    this.end = 0;
    this.error = undefined;
  }

  /** The column of field `index`, made on first use with room for the batch's rows. */
  column(index: number, kind: FieldKind.Text | FieldKind.Number): CsvColumn {
    let column = this.columns[index];
    if (column === undefined || column.kind !== kind) {
      while (this.columns.length < index) this.columns.push(undefined);
      column = new CsvColumn(kind, this.capacity);
      this.columns[index] = column;
    }
    return column;
  }

  /** Room for one more row in every array. */
  grow(): void {
    this.capacity *= 2;
    this.recordStarts = copyInto(new Int32Array(this.capacity), this.recordStarts);
    this.fieldCounts = copyInto(new Int32Array(this.capacity), this.fieldCounts);
    for (const column of this.columns) column?.grow(this.capacity);
  }

  /** Field `index` of `row` as a string (the row must have it, and its column be kept). */
  text(index: number, row: number, quote: string): string {
    const column = this.columns[index] as CsvColumn;
    const start = column.starts[row];
    if (start >= 0) return this.data.toString(this.ascii ? 'latin1' : 'utf8', start, column.ends[row]);
    // A quoted field with doubled quotes: each pair stands for one.
    return this.data.toString(this.ascii ? 'latin1' : 'utf8', ~start, column.ends[row]).replaceAll(quote + quote, quote);
  }
}

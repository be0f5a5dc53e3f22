import { CsvColumns, NumberStatus } from './CsvColumns.js';
import { FieldKind, type FieldKinds } from './FieldKind.js';
import { numberFromBytes, numberFromText, type ParsedNumber } from './NumberFromBytes.js';

const NEWLINE = 0x0a;
const RETURN = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;

/**
 * RFC 4180 records scanned from bytes into columns (CsvColumns), one pass, no string
 * made: a record ends at LF or CRLF outside quotes; a field that starts with the quote
 * runs to the quote not doubled, may hold delimiters, newlines and doubled quotes, and
 * may be followed by spaces before its delimiter or newline (as papaparse allows); a
 * quote inside an unquoted field is text. A record of one empty field (an empty line)
 * is no record. A field the kinds skip is stepped over without being decoded.
 * A quoted field that does not close, or is followed by other text, stops the scan
 * with the batch's `error` at the record's start.
 */
export class CsvScanner {
  private readonly delimiter: number;
  private readonly quote: number;
  private readonly quoteText: string;
  private readonly parsed: ParsedNumber = { value: 0, status: NumberStatus.Null };

  constructor(delimiter: string, quote: string) {
    this.delimiter = delimiter.charCodeAt(0);
    this.quote = quote.charCodeAt(0);
    this.quoteText = quote;
  }

  /** Scans the records of data[start, end) (whole records) into `batch`, after its rows, at most `maxRows` of them. */
  scan(batch: CsvColumns, start: number, end: number, kinds: FieldKinds, maxRows = Infinity): void {
    const data = batch.data;
    const delimiter = this.delimiter;
    const quote = this.quote;
    const byIndex = kinds.byIndex;
    const known = byIndex.length;
    const rest = kinds.rest;
    let i = start;
    let rows = batch.rows;
    while (i < end && rows < maxRows) {
      if (rows === batch.capacity) batch.grow();
      const recordStart = i;
      let field = 0;
      let firstEmpty = false;
      for (;;) {
        let fieldStart = i;
        let fieldEnd: number;
        let escaped = false;
        if (i < end && data[i] === quote) {
          fieldStart = ++i;
          for (;;) {
            if (i >= end) {
              batch.error = { recordStart, why: 'a quoted field is never closed' };
              batch.rows = rows;
              batch.end = recordStart;
              return;
            }
            if (data[i] === quote) {
              if (i + 1 < end && data[i + 1] === quote) {
                escaped = true;
                i += 2;
                continue;
              }
              break;
            }
            i++;
          }
          fieldEnd = i++;
          while (i < end && data[i] !== delimiter && (data[i] === SPACE || data[i] === TAB)) i++;
          if (i < end && data[i] !== delimiter && data[i] !== NEWLINE && !(data[i] === RETURN && i + 1 < end && data[i + 1] === NEWLINE)) {
            batch.error = { recordStart, why: 'a quoted field is followed by text before its delimiter' };
            batch.rows = rows;
            batch.end = recordStart;
            return;
          }
        } else {
          while (i < end) {
            const c = data[i];
            if (c === delimiter || c === NEWLINE) break;
            i++;
          }
          // A CRLF's CR is no part of the field.
          fieldEnd = i < end && data[i] === NEWLINE && i > fieldStart && data[i - 1] === RETURN ? i - 1 : i;
        }
        if (field === 0) firstEmpty = fieldEnd === fieldStart;
        const kind = field < known ? byIndex[field] : rest;
        if (kind !== FieldKind.Skip) this.keep(batch, field, kind, rows, fieldStart, fieldEnd, escaped);
        field++;
        if (i >= end) break;
        const c = data[i++];
        if (c === delimiter) continue;
        // A quoted field's CRLF: past the LF too.
        if (c === RETURN) i++;
        break;
      }
      // An empty line is no record.
      if (field === 1 && firstEmpty) continue;
      batch.recordStarts[rows] = recordStart;
      batch.fieldCounts[rows] = field;
      rows++;
    }
    batch.rows = rows;
    batch.end = i;
  }

  private keep(batch: CsvColumns, field: number, kind: FieldKind.Text | FieldKind.Number, row: number, start: number, end: number, escaped: boolean): void {
    const column = batch.column(field, kind);
    column.starts[row] = escaped ? ~start : start;
    column.ends[row] = end;
    if (kind !== FieldKind.Number) return;
    const parsed = this.parsed;
    if (escaped) numberFromText(batch.text(field, row, this.quoteText), parsed);
    else numberFromBytes(batch.data, start, end, batch.ascii, parsed);
    (column.values as Float64Array)[row] = parsed.value;
    (column.status as Uint8Array)[row] = parsed.status;
  }
}

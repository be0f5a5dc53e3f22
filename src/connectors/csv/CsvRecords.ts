import type { CsvColumnType, CsvColumnTypes } from './CsvOptions.js';
import { NumberStatus, type CsvColumn, type CsvColumns } from './CsvColumns.js';
import { FieldKind, type FieldKinds } from './FieldKind.js';

/** A record that does not fit, and why. */
export class BadRecord {
  constructor(readonly why: string) {}
}

/** A boolean column's text: `true`/`1`, `false`/`0` in any case and spacing, empty is null, else undefined. */
function booleanOf(text: string): boolean | null | undefined {
  if (text === '') return null;
  const lower = text.trim().toLowerCase();
  if (lower === 'true' || lower === '1') return true;
  if (lower === 'false' || lower === '0') return false;
  return undefined;
}

const kindOf = (type: CsvColumnType | undefined): FieldKind => (type === undefined ? FieldKind.Skip : type === 'number' ? FieldKind.Number : FieldKind.Text);

/**
 * The records a CSV source gives, made from a scanned batch at the source's output:
 * with a header, an object by its names; without, an array of the row's fields. A
 * field is a string, or where `columns` types it a number or boolean (null if empty).
 * `columns` is also a projection: given, a record holds only the columns it names (an
 * array keeps their positions, null at the others and past the row's end), and the
 * scanner skips every other field without decoding it. Without it every field is a
 * string. It tells the scanner what to keep: numbers parsed, fields no record reads
 * (and those past a header's width: a record that fails anyway) skipped.
 */
export class CsvRecords {
  readonly kinds: FieldKinds;
  /** By field index, the type of each field a record holds (undefined: not read). */
  private readonly types: (CsvColumnType | undefined)[];
  /** The field indexes a record holds, in order. */
  private readonly kept: number[];
  /** A projected array record's length: one past its last column. */
  private readonly width: number;
  /** A column `columns` names that the header does not. */
  readonly missing: string | undefined;

  constructor(
    columnTypes: CsvColumnTypes | undefined,
    private readonly names: string[] | undefined,
    private readonly quote: string,
  ) {
    const projected = columnTypes !== undefined;
    if (names !== undefined) {
      this.types = names.map((name) => (!projected ? 'string' : Object.hasOwn(columnTypes, name) ? columnTypes[name] : undefined));
      this.missing = projected ? Object.keys(columnTypes).find((name) => !names.includes(name)) : undefined;
    } else {
      this.types = [];
      for (const [index, type] of Object.entries(columnTypes ?? {})) this.types[Number(index)] = type;
    }
    this.kept = [];
    this.types.forEach((type, index) => type !== undefined && this.kept.push(index));
    this.width = this.types.length;
    const rest = names === undefined && !projected ? FieldKind.Text : FieldKind.Skip;
    this.kinds = { byIndex: Array.from({ length: this.types.length }, (_, i) => kindOf(this.types[i])), rest };
  }

  /** Row `row` of the batch as a record, or why it does not fit. */
  record(batch: CsvColumns, row: number): unknown {
    if (this.names !== undefined) return this.object(batch, row, this.names);
    return this.kinds.rest === FieldKind.Skip ? this.projectedArray(batch, row) : this.array(batch, row);
  }

  private object(batch: CsvColumns, row: number, names: string[]): unknown {
    const count = batch.fieldCounts[row];
    if (count !== names.length) return new BadRecord(`the record has ${count} fields and the header ${names.length}`);
    const record: Record<string, unknown> = {};
    for (const i of this.kept) {
      const value = this.value(batch, i, row);
      if (value === undefined) return new BadRecord(`column ${names[i]}, ${JSON.stringify(batch.text(i, row, this.quote))}, is not a ${this.types[i]}`);
      record[names[i]] = value;
    }
    return record;
  }

  /** Every field of the row, as a string (no columns declared). */
  private array(batch: CsvColumns, row: number): unknown {
    const count = batch.fieldCounts[row];
    const fields: string[] = new Array(count);
    for (let i = 0; i < count; i++) fields[i] = batch.text(i, row, this.quote);
    return fields;
  }

  /** The declared fields at their positions, null elsewhere and where the row is shorter. */
  private projectedArray(batch: CsvColumns, row: number): unknown {
    const count = batch.fieldCounts[row];
    const fields: unknown[] = new Array(this.width).fill(null);
    for (const i of this.kept) {
      if (i >= count) break;
      const value = this.value(batch, i, row);
      if (value === undefined) return new BadRecord(`field ${i + 1}, ${JSON.stringify(batch.text(i, row, this.quote))}, is not a ${this.types[i]}`);
      fields[i] = value;
    }
    return fields;
  }

  /** Field `index` of `row` as its column's type: undefined where it does not convert. */
  private value(batch: CsvColumns, index: number, row: number): string | number | boolean | null | undefined {
    const type = this.types[index] ?? 'string';
    if (type === 'string') return batch.text(index, row, this.quote);
    if (type === 'boolean') return booleanOf(batch.text(index, row, this.quote));
    const column = batch.columns[index] as CsvColumn;
    const status = (column.status as Uint8Array)[row];
    if (status === NumberStatus.Number) return (column.values as Float64Array)[row];
    return status === NumberStatus.Null ? null : undefined;
  }
}

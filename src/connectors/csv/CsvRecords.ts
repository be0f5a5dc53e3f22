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

/**
 * The records a CSV source gives, made from a scanned batch at the source's output:
 * with a header, an object by its names; without, an array of the row's fields. A
 * field is a string, or where `columns` types it a number or boolean (null if empty).
 * It also tells the scanner what to keep: numbers parsed, fields past a header's
 * width (a record that fails anyway) skipped.
 */
export class CsvRecords {
  readonly kinds: FieldKinds;
  private readonly types: CsvColumnType[];

  constructor(
    columnTypes: CsvColumnTypes,
    private readonly names: string[] | undefined,
    private readonly quote: string,
  ) {
    if (names !== undefined) this.types = names.map((name) => (Object.hasOwn(columnTypes, name) ? columnTypes[name] : 'string'));
    else {
      this.types = [];
      for (const [index, type] of Object.entries(columnTypes)) this.types[Number(index)] = type;
      for (let i = 0; i < this.types.length; i++) this.types[i] ??= 'string';
    }
    this.kinds = { byIndex: this.types.map((type) => (type === 'number' ? FieldKind.Number : FieldKind.Text)), rest: names === undefined ? FieldKind.Text : FieldKind.Skip };
  }

  /** Row `row` of the batch as a record, or why it does not fit. */
  record(batch: CsvColumns, row: number): unknown {
    return this.names === undefined ? this.array(batch, row) : this.object(batch, row, this.names);
  }

  private object(batch: CsvColumns, row: number, names: string[]): unknown {
    const count = batch.fieldCounts[row];
    if (count !== names.length) return new BadRecord(`the record has ${count} fields and the header ${names.length}`);
    const record: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) {
      const value = this.value(batch, i, row);
      if (value === undefined) return new BadRecord(`column ${names[i]}, ${JSON.stringify(batch.text(i, row, this.quote))}, is not a ${this.types[i]}`);
      record[names[i]] = value;
    }
    return record;
  }

  private array(batch: CsvColumns, row: number): unknown {
    const count = batch.fieldCounts[row];
    const fields: unknown[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const value = this.value(batch, i, row);
      if (value === undefined) return new BadRecord(`field ${i + 1}, ${JSON.stringify(batch.text(i, row, this.quote))}, is not a ${this.types[i]}`);
      fields[i] = value;
    }
    return fields;
  }

  /** Field `index` of `row` as its column's type: undefined where it does not convert. */
  private value(batch: CsvColumns, index: number, row: number): string | number | boolean | null | undefined {
    const type = index < this.types.length ? this.types[index] : 'string';
    if (type === 'string') return batch.text(index, row, this.quote);
    if (type === 'boolean') return booleanOf(batch.text(index, row, this.quote));
    const column = batch.columns[index] as CsvColumn;
    const status = (column.status as Uint8Array)[row];
    if (status === NumberStatus.Number) return (column.values as Float64Array)[row];
    return status === NumberStatus.Null ? null : undefined;
  }
}

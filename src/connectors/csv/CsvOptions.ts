/**
 * The options of the CSV source and sink, as the job model carries them (plain data,
 * no library's types: they are part of the package's declarations).
 */

/** What a CSV column's text is read as: kept as it is (the default), a number, or a boolean (`true`/`false`, `1`/`0`, any case). */
export type CsvColumnType = 'string' | 'number' | 'boolean';

/** A field as the CSV source gives it: a string, or a typed column's number, boolean, or null (an empty field). */
export type CsvValue = string | number | boolean | null;

/** Column types by the header's names, or without a header by position (`{ 0: 'number' }`). */
export type CsvColumnTypes = Record<string, CsvColumnType>;

export interface CsvReadOptions {
  /** The file's first record names the columns, and each record is an object keyed by them; without it a record is an array. */
  header?: boolean;
  /**
   * The columns to read and their types (a projection): a record holds only these (an
   * array record keeps their positions, null at the others), and the other fields are
   * stepped over without being decoded. Without it, every column is read as a string.
   */
  columns?: CsvColumnTypes;
  /** One character; `,` by default. */
  delimiter?: string;
  /** One character, doubled inside a quoted field to stand for itself; `"` by default. */
  quote?: string;
  /** A record that does not fit (a typed field that does not convert, a field count unlike the header's): fail the job (default), or skip and count it. */
  onError?: 'fail' | 'skip';
}

export interface CsvWriteOptions {
  /** Each file starts with a line of the column names. */
  header?: boolean;
  /** The columns of object records, in order; by default the first record's keys. For array records, the header's names. */
  columns?: string[];
  /** One character; `,` by default. */
  delimiter?: string;
}

export const CSV_COLUMN_TYPES: readonly CsvColumnType[] = ['string', 'number', 'boolean'];

/** What is wrong with a delimiter or quote, or undefined: one character, not a newline. */
export function characterProblem(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length !== 1 || value === '\n' || value === '\r') return `${name} must be one character other than a newline, not ${JSON.stringify(value)}`;
  return undefined;
}

/** What is wrong with the column types, or undefined. */
export function columnTypesProblem(columns: unknown): string | undefined {
  if (columns === undefined) return undefined;
  if (columns === null || typeof columns !== 'object' || Array.isArray(columns)) return `columns must map column names (or indexes) to types, not ${JSON.stringify(columns)}`;
  for (const [name, type] of Object.entries(columns)) {
    if (!CSV_COLUMN_TYPES.includes(type as CsvColumnType)) return `column ${JSON.stringify(name)} has type ${JSON.stringify(type)}; a CSV column is one of ${CSV_COLUMN_TYPES.join(', ')}`;
  }
  return undefined;
}

/**
 * The schema a Parquet sink writes (plain data, part of the package's declarations):
 * a column name to its type, in order.
 *
 *   stream.writeParquet(folder, { name: 'UTF8', price: 'DOUBLE', n: 'INT64', ok: 'BOOLEAN' })
 *
 * Every column is optional (null or undefined is written as null). What a record's
 * field may be for each type:
 * - `UTF8` (or `STRING`): a string;
 * - `BOOLEAN`: a boolean;
 * - `INT32`: an integer number; `INT64`: an integer number or a bigint (read back as a bigint);
 * - `FLOAT`, `DOUBLE`: a number;
 * - `TIMESTAMP`: a Date (milliseconds);
 * - `JSON`: anything JSON.stringify takes (read back parsed);
 * - `BYTE_ARRAY`: a Uint8Array.
 */
export type ParquetType = 'UTF8' | 'STRING' | 'BOOLEAN' | 'INT32' | 'INT64' | 'FLOAT' | 'DOUBLE' | 'TIMESTAMP' | 'JSON' | 'BYTE_ARRAY';

export type ParquetSchema = Record<string, ParquetType>;

/** How a Parquet sink compresses its pages: snappy by default (as Spark and DuckDB do). */
export type ParquetCompression = 'snappy' | 'gzip' | 'zstd' | 'none';

/** A value as the Parquet source gives it: INT64 as a bigint, timestamps and dates as Dates, JSON parsed, bytes as Uint8Arrays, nested groups as objects and lists. */
export type ParquetValue = string | number | bigint | boolean | null | Date | Uint8Array | ParquetValue[] | { [field: string]: ParquetValue };

export const PARQUET_TYPES: readonly ParquetType[] = ['UTF8', 'STRING', 'BOOLEAN', 'INT32', 'INT64', 'FLOAT', 'DOUBLE', 'TIMESTAMP', 'JSON', 'BYTE_ARRAY'];
export const PARQUET_COMPRESSIONS: readonly ParquetCompression[] = ['snappy', 'gzip', 'zstd', 'none'];

/** What is wrong with a schema, or undefined. */
export function schemaProblem(schema: unknown): string | undefined {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema) || Object.keys(schema).length === 0) {
    return `needs a schema, column names to Parquet types (e.g. { name: 'UTF8', price: 'DOUBLE' }), not ${JSON.stringify(schema)}`;
  }
  for (const [name, type] of Object.entries(schema)) {
    if (!PARQUET_TYPES.includes(type as ParquetType)) return `column ${JSON.stringify(name)} has type ${JSON.stringify(type)}; a Parquet column is one of ${PARQUET_TYPES.join(', ')}`;
  }
  return undefined;
}

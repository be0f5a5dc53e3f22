/**
 * A catalogue table's `WITH (...)` options as Spillway's sources and sinks, under Flink's
 * option names (`'connector' = 'filesystem' | 'nexmark' | 'redis-stream' | 'postgres' |
 * 'jdbc' | 'blackhole' | 'print' | 'datagen'`), and the rows each gives: an array of the
 * table's physical columns, in order.
 */
import type { JsonValue } from '../../job/api/JobBuilder.js';
import type { JobBuilder } from '../../job/api/JobBuilder.js';
import type { Stream } from '../../job/api/Stream.js';
import type { NexmarkEvent } from '../../connectors/nexmark/NexmarkGenerator.js';
import type { ParquetSchema, ParquetType } from '../../connectors/parquet/ParquetSchema.js';
import type { CsvColumnTypes } from '../../connectors/csv/CsvOptions.js';
import type { CatalogTable } from '../Catalog.js';
import type { SqlType } from '../parser/Ast.js';
import { SqlError } from '../SqlError.js';
import { externalValue, isTimestamp } from '../Types.js';
import { FUNCTIONS } from './Functions.js';

/** A value of a row: what a column holds, and what crosses an exchange as it is. */
export type SqlScalar = string | number | boolean | null;
/** A ROW is an object and an ARRAY an array, of scalars (one level: the typed API's exchange check does not follow a recursive type). */
export type SqlValue = SqlScalar | SqlScalar[] | Record<string, SqlScalar | SqlScalar[]>;

export type Row = SqlValue[];

/** The physical columns of a table: those with a type (computed ones have an expression). */
export function physicalColumns(table: CatalogTable): { name: string; type: SqlType }[] {
  return table.columns.flatMap((c) => (c.type ? [{ name: c.name, type: c.type }] : []));
}

/** Flink's legacy option names (`connector.type`, `connector.path`, `format.type`) read as the current ones. */
export function connectorOptions(table: CatalogTable): Record<string, string> {
  const o = { ...table.options };
  if (o.connector === undefined && o['connector.type'] !== undefined) o.connector = o['connector.type'];
  if (o.path === undefined && o['connector.path'] !== undefined) o.path = o['connector.path'];
  if (o.format === undefined && o['format.type'] !== undefined) o.format = o['format.type'];
  if (o.path !== undefined) o.path = o.path.replace(/^file:\/\//, '');
  return o;
}

function option(table: CatalogTable, options: Record<string, string>, key: string): string {
  const value = options[key];
  if (value === undefined || value === '') throw new SqlError('SPW_ERR_SQL_TYPE', `table ${table.name}: its connector needs the option '${key}'`, undefined, undefined);
  return value;
}

function numberOption(table: CatalogTable, options: Record<string, string>, key: string): number | undefined {
  const text = options[key];
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) throw new SqlError('SPW_ERR_SQL_TYPE', `table ${table.name}: option '${key}' must be a number, not '${text}'`, undefined, undefined);
  return n;
}

/** Whether a table's source ends: files, bounded Redis streams, PostgreSQL, and nexmark or datagen with a count. */
export function isBoundedTable(table: CatalogTable): boolean {
  const o = connectorOptions(table);
  switch (o.connector) {
    case 'nexmark':
      return o['events.num'] !== undefined && Number(o['events.num']) > 0;
    case 'datagen':
      return o['number-of-rows'] !== undefined;
    case 'redis-stream':
      return o['scan.bounded'] !== 'false';
    default:
      return true;
  }
}

/** The nexmark generator's proportions: the only ones it makes (1 person, 3 auctions, 46 bids of every 50 events). */
const NEXMARK_PROPORTIONS: Record<string, string> = { 'person.proportion': '1', 'auction.proportion': '3', 'bid.proportion': '46' };

/**
 * The table's source, as rows of its physical columns. `used`: the names the statement uses (a
 * reader of columns reads only these; the others are null). `spare`: slots a row leaves for the
 * table's computed columns, which a source that makes its rows itself allocates with them
 * (growing a row copies it).
 */
export function sourceRows(job: JobBuilder, table: CatalogTable, used: ReadonlySet<string> | undefined, spare = 0): Stream<Row> {
  const o = connectorOptions(table);
  const columns = physicalColumns(table);
  const names = columns.map((c) => c.name);
  switch (o.connector) {
    case 'nexmark': {
      for (const [key, value] of Object.entries(NEXMARK_PROPORTIONS)) {
        if (o[key] !== undefined && Number(o[key]) !== Number(value)) throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `table ${table.name}: the nexmark generator makes '${key}' = '${value}' only`, undefined, undefined);
      }
      const events = numberOption(table, o, 'events.num');
      // The rate paces the generator in wall time; 0 (or absent) runs unpaced at the suite's event spacing.
      const rate = numberOption(table, o, 'first-event.rate');
      const seed = numberOption(table, o, 'seed') ?? 0;
      const source = job.nexmark({ events: events === undefined || events === 0 ? undefined : events, rate: rate === undefined || rate === 0 ? undefined : rate, seed });
      return source.map(nexmarkRow(names, spare)) as unknown as Stream<Row>;
    }
    case 'filesystem': {
      const path = option(table, o, 'path');
      const format = option(table, o, 'format');
      if (format === 'csv') {
        // The columns the query reads, a projection: the scanner skips the others undecoded.
        const types: CsvColumnTypes = {};
        columns.forEach((c, i) => {
          if (used !== undefined && !used.has(c.name.toLowerCase())) return;
          types[String(i)] = isNumberType(c.type) ? 'number' : c.type.name === 'BOOLEAN' ? 'boolean' : 'string';
        });
        const delimiter = o['csv.field-delimiter'];
        const timestamps = columns.map((c) => isTimestamp(c.type));
        return job.readCsv<unknown[]>(path, { columns: types, ...(delimiter === undefined ? {} : { delimiter }) }).map((fields) => {
          const row = new Array<unknown>(names.length);
          for (let i = 0; i < row.length; i++) {
            const v = fields[i];
            row[i] = v === '' || v === undefined || v === null ? null : timestamps[i] ? FUNCTIONS.toTimestamp(v) : v;
          }
          return row;
        }) as unknown as Stream<Row>;
      }
      if (format === 'json') {
        const timestamps = columns.map((c) => isTimestamp(c.type));
        return job.readJsonLines<Record<string, JsonValue>>(path).map((obj) => names.map((n, i) => (timestamps[i] ? FUNCTIONS.toTimestamp(obj[n] ?? null) : (obj[n] ?? null)))) as unknown as Stream<Row>;
      }
      if (format === 'parquet') {
        const read = used === undefined ? names : names.filter((n) => used.has(n.toLowerCase()));
        return job.readParquet<Record<string, unknown>>(path, { columns: read }).map((obj) => names.map((n) => parquetValue(obj[n]))) as unknown as Stream<Row>;
      }
      throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `table ${table.name}: format '${format}' (csv, json or parquet)`, undefined, undefined);
    }
    case 'postgres':
    case 'jdbc': {
      const url = option(table, o, 'url');
      const name = o['table-name'] ?? table.name;
      const query = `SELECT ${names.map((n) => `"${n}"`).join(', ')} FROM ${name}`;
      return job.readPostgres<Record<string, unknown>>({ url, query }).map((obj) => names.map((n) => obj[n] ?? null)) as unknown as Stream<Row>;
    }
    case 'redis-stream': {
      const url = option(table, o, 'url');
      const stream = option(table, o, 'stream');
      const numbers = columns.map((c) => isNumberType(c.type));
      return job.readRedisStream({ url, streams: [stream], bounded: o['scan.bounded'] !== 'false' }).map((entry) => names.map((n, i) => {
        const v = entry.fields[n];
        return v === undefined ? null : numbers[i] ? Number(v) : v;
      })) as unknown as Stream<Row>;
    }
    case 'datagen': {
      const rows = numberOption(table, o, 'number-of-rows') ?? 0;
      return job.generate<Row>(function* (subtask, parallelism): Generator<Row> {
        for (let i = subtask; i < rows; i += parallelism) yield columns.map((c, j) => datagenValue(c.type, i, j));
      });
    }
    default:
      throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `table ${table.name}: no source for connector '${o.connector ?? ''}' (filesystem, nexmark, redis-stream, postgres, jdbc, datagen)`, undefined, undefined);
  }
}

function isNumberType(type: SqlType): boolean {
  return type.name === 'INT' || type.name === 'BIGINT' || type.name === 'DOUBLE' || type.name === 'DECIMAL' || type.name === 'INTEGER' || type.name === 'FLOAT' || type.name === 'TINYINT' || type.name === 'SMALLINT';
}

function parquetValue(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return v.getTime();
  return v ?? null;
}

/** A deterministic value of a datagen column: the row number, or text made of it. */
function datagenValue(type: SqlType, row: number, column: number): SqlValue {
  if (isNumberType(type)) return row;
  if (type.name === 'BOOLEAN') return row % 2 === 0;
  if (isTimestamp(type)) return row * 1000;
  return `${column}-${row}`;
}

/** The datagen table's columns of a Nexmark event: event_type (0 person, 1 auction, 2 bid), person, auction, bid; `spare` slots after them. */
function nexmarkRow(names: readonly string[], spare: number): (e: NexmarkEvent) => Row {
  const at = (name: string): number => names.findIndex((n) => n.toLowerCase() === name);
  const [type, person, auction, bid] = [at('event_type'), at('person'), at('auction'), at('bid')];
  const width = names.length + spare;
  return (e) => {
    // Sized once and every slot written: a filled or grown array costs several times as much.
    const row = new Array<SqlValue>(width);
    for (let i = 0; i < width; i++) row[i] = null;
    if (e.type === 'person') {
      if (type >= 0) row[type] = 0;
      if (person >= 0) row[person] = e.person as unknown as SqlValue;
    } else if (e.type === 'auction') {
      if (type >= 0) row[type] = 1;
      if (auction >= 0) row[auction] = e.auction as unknown as SqlValue;
    } else {
      if (type >= 0) row[type] = 2;
      if (bid >= 0) row[bid] = e.bid as unknown as SqlValue;
    }
    return row;
  };
}

/** Which changes a sink takes: appends only, or an upsert by the table's primary key. */
export function sinkTakesUpdates(table: CatalogTable): boolean {
  const connector = connectorOptions(table).connector;
  return connector === 'blackhole' || connector === 'print' || ((connector === 'postgres' || connector === 'jdbc') && table.primaryKey.length > 0);
}

/** The table's rows as a sink writes them: objects of the physical columns, timestamps in Flink's form. */
export function externalRow(columns: readonly { name: string; type: SqlType }[]): (row: Row) => Record<string, SqlValue> {
  return (row) => {
    const out: Record<string, SqlValue> = {};
    for (let i = 0; i < columns.length; i++) out[columns[i]!.name] = externalValue(row[i], columns[i]!.type) as SqlValue;
    return out;
  };
}

/** Ends `rows` (plain rows of the table's physical columns, or changes when `updating`) in the table's sink. */
export function writeSink(rows: Stream<Row>, table: CatalogTable, updating: boolean): void {
  const o = connectorOptions(table);
  const columns = physicalColumns(table);
  const external = externalRow(columns);
  switch (o.connector) {
    case 'blackhole':
      rows.discard();
      return;
    case 'print':
      // Objects (or changes of them), typed as rows: the typed API's exchange check does not follow a recursive value type.
      (rows.map((r) => (updating ? { op: (r as unknown as Change).op, row: external((r as unknown as Change).row) } : external(r))) as unknown as Stream<Record<string, string>>).collect();
      return;
    case 'filesystem': {
      const path = option(table, o, 'path');
      const format = option(table, o, 'format');
      const objects = rows.map((r) => external(r));
      if (table.partitionedBy.length > 0) {
        writePartitioned(objects, table, path, format, columns);
        return;
      }
      if (format === 'json') objects.writeJsonLines(path);
      else if (format === 'csv') objects.writeCsv(path, { columns: columns.map((c) => c.name) });
      else if (format === 'parquet') objects.writeParquet(path, parquetSchema(columns));
      else throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `table ${table.name}: format '${format}' (csv, json or parquet)`, undefined, undefined);
      return;
    }
    case 'postgres':
    case 'jdbc': {
      const url = option(table, o, 'url');
      const name = o['table-name'] ?? table.name;
      const upserts = updating ? rows.flatMap<Row>((c, emit) => {
        const change = c as unknown as Change;
        // An upsert sink applies an update's after-image by the primary key; the before-image is implied.
        if (change.op === '+I' || change.op === '+U') emit(change.row);
      }) : rows;
      const upsertKey = table.primaryKey.length > 0 ? table.primaryKey : undefined;
      upserts.map((r) => external(r)).writePostgres({ url, table: name, columns: columns.map((c) => c.name), ...(upsertKey === undefined ? {} : { upsertKey }) });
      return;
    }
    case 'redis-stream': {
      const url = option(table, o, 'url');
      const stream = option(table, o, 'stream');
      rows.map((r) => Object.fromEntries(Object.entries(external(r)).map(([k, v]) => [k, v === null ? '' : String(v)]))).writeRedisStream({ url, stream });
      return;
    }
    default:
      throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `table ${table.name}: no sink for connector '${o.connector ?? ''}' (filesystem, redis-stream, postgres, jdbc, blackhole, print)`, undefined, undefined);
  }
}

/** `PARTITIONED BY (...)`: a folder per partition value (`col=value/`), the other columns in its files, as Flink's filesystem connector. */
function writePartitioned(objects: Stream<Record<string, SqlValue>>, table: CatalogTable, path: string, format: string, columns: readonly { name: string; type: SqlType }[]): void {
  const missing = table.partitionedBy.find((p) => !columns.some((c) => c.name === p));
  if (missing !== undefined) throw new SqlError('SPW_ERR_SQL_UNKNOWN_COLUMN', `table ${table.name}: PARTITIONED BY names ${missing}, which is not one of its physical columns`, undefined, undefined);
  const written = columns.filter((c) => !table.partitionedBy.includes(c.name));
  if (format === 'json') objects.writePartitioned(path, table.partitionedBy, { kind: 'jsonLines' });
  else if (format === 'csv') objects.writePartitioned(path, table.partitionedBy, { kind: 'csv', columns: written.map((c) => c.name) });
  else if (format === 'parquet') objects.writePartitioned(path, table.partitionedBy, { kind: 'parquet', schema: parquetSchema(written) });
  else throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `table ${table.name}: format '${format}' (csv, json or parquet)`, undefined, undefined);
}

function parquetSchema(columns: readonly { name: string; type: SqlType }[]): ParquetSchema {
  const of = (type: SqlType): ParquetType => {
    if (type.name === 'INT' || type.name === 'BIGINT') return 'INT64';
    if (type.name === 'DOUBLE' || type.name === 'DECIMAL') return 'DOUBLE';
    if (type.name === 'BOOLEAN') return 'BOOLEAN';
    return 'STRING';
  };
  return Object.fromEntries(columns.map((c) => [c.name, of(c.type)]));
}

/** A change of an updating result (Flink's RowKind): insert, update before, update after, delete. */
export interface Change {
  op: '+I' | '-U' | '+U' | '-D';
  row: Row;
}

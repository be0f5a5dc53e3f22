/**
 * Flink's SQL types as the planner knows them, and how their values are held in a row: numbers
 * for every numeric type (DECIMAL as a double), strings, booleans, epoch milliseconds for
 * TIMESTAMP, TIMESTAMP_LTZ and DATE, plain objects for ROW, arrays for ARRAY, objects for MAP,
 * null for NULL.
 */
import type { SqlType } from './parser/Ast.js';
import { toLocal } from './TimeZone.js';

export type { SqlType };

const ALIASES: Record<string, string> = {
  INTEGER: 'INT',
  TINYINT: 'INT',
  SMALLINT: 'INT',
  VARCHAR: 'STRING',
  CHAR: 'STRING',
  TEXT: 'STRING',
  FLOAT: 'DOUBLE',
  REAL: 'DOUBLE',
  NUMERIC: 'DECIMAL',
  DEC: 'DECIMAL',
  BOOL: 'BOOLEAN',
  TIMESTAMP_LTZ: 'TIMESTAMP_LTZ',
  BYTES: 'STRING',
};

const KNOWN = new Set(['BOOLEAN', 'INT', 'BIGINT', 'DOUBLE', 'DECIMAL', 'STRING', 'TIMESTAMP', 'TIMESTAMP_LTZ', 'DATE', 'TIME', 'ROW', 'ARRAY', 'MAP', 'NULL', 'ANY']);

/** The type's canonical name (`VARCHAR` is `STRING`, `INTEGER` is `INT`), or undefined for a name Flink does not have. */
export function canonicalTypeName(name: string): string | undefined {
  const upper = name.toUpperCase();
  const canonical = ALIASES[upper] ?? upper;
  return KNOWN.has(canonical) ? canonical : undefined;
}

export function typeOf(name: string): SqlType {
  return { name, params: [] };
}

export const ANY = typeOf('ANY');
export const BIGINT = typeOf('BIGINT');
export const DOUBLE = typeOf('DOUBLE');
export const STRING = typeOf('STRING');
export const BOOLEAN = typeOf('BOOLEAN');
export const TIMESTAMP = typeOf('TIMESTAMP');

export function isTimestamp(type: SqlType): boolean {
  return type.name === 'TIMESTAMP' || type.name === 'TIMESTAMP_LTZ' || type.name === 'DATE';
}

export function isNumeric(type: SqlType): boolean {
  return type.name === 'INT' || type.name === 'BIGINT' || type.name === 'DOUBLE' || type.name === 'DECIMAL';
}

export function isIntegral(type: SqlType): boolean {
  return type.name === 'INT' || type.name === 'BIGINT';
}

/** How DESCRIBE writes a type: `BIGINT`, `DECIMAL(23, 3)`, `ROW<id BIGINT, ...>`. */
export function typeText(type: SqlType): string {
  if (type.fields) return `ROW<${type.fields.map((f) => `${f.name} ${typeText(f.type)}`).join(', ')}>`;
  if (type.element) return `ARRAY<${typeText(type.element)}>`;
  if (type.key && type.value) return `MAP<${typeText(type.key)}, ${typeText(type.value)}>`;
  return type.params.length > 0 ? `${type.name}(${type.params.join(', ')})` : type.name;
}

/** A timestamp as Flink's SQL client writes it: `2026-12-07 10:00:00.000`, in UTC. */
export function formatTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/**
 * A row's value as a sink or the client shows it: timestamps in Flink's form, the rest as they
 * are. `timeZone`: where the client shows a TIMESTAMP_LTZ (the session's zone); sinks write it in UTC.
 */
export function externalValue(value: unknown, type: SqlType, timeZone = 'UTC'): unknown {
  if (value === null || value === undefined) return null;
  if (type.name === 'DATE' && typeof value === 'number') return formatTimestamp(value).slice(0, 10);
  if (type.name === 'TIMESTAMP_LTZ' && typeof value === 'number') return formatTimestamp(toLocal(value, timeZone));
  if (isTimestamp(type) && typeof value === 'number') return formatTimestamp(value);
  return value;
}

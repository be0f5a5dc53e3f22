/**
 * The rows of a bounded table read whole and at once, for a lookup join's probe side (each
 * task holds them in memory): CSV and JSON Lines files of the filesystem connector.
 */
import fs from 'node:fs';
import path from 'node:path';
import Papa from 'papaparse';
import type { CatalogTable } from '../Catalog.js';
import { SqlError } from '../SqlError.js';
import { isTimestamp } from '../Types.js';
import { connectorOptions, physicalColumns, type Row, type SqlValue } from './Connectors.js';
import { FUNCTIONS } from './Functions.js';

export function readBoundedRows(table: CatalogTable): Row[] {
  const o = connectorOptions(table);
  if (o.connector !== 'filesystem' || o.path === undefined) {
    throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `table ${table.name}: a lookup join reads a filesystem table (csv or json)`, undefined, undefined);
  }
  const columns = physicalColumns(table);
  const files = fs.statSync(o.path).isDirectory() ? fs.readdirSync(o.path).filter((f) => !f.startsWith('.')).map((f) => path.join(o.path!, f)) : [o.path];
  const value = (v: unknown, i: number): SqlValue => {
    if (v === undefined || v === null || v === '') return null;
    const type = columns[i]!.type.name;
    if (type === 'INT' || type === 'BIGINT' || type === 'DOUBLE' || type === 'DECIMAL') return Number(v);
    if (isTimestamp(columns[i]!.type)) return FUNCTIONS.toTimestamp(v) as SqlValue;
    return v as SqlValue;
  };
  const rows: Row[] = [];
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    if (o.format === 'json') {
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        const obj = JSON.parse(line) as Record<string, unknown>;
        rows.push(columns.map((c, i) => value(obj[c.name], i)));
      }
    } else {
      const parsed = Papa.parse<string[]>(text, { skipEmptyLines: true });
      for (const fields of parsed.data) rows.push(columns.map((_, i) => value(fields[i], i)));
    }
  }
  return rows;
}

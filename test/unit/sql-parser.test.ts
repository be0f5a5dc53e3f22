import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ParsedStatement, parseStatements } from '../../src/sql/parser/Parser.js';
import { SqlError } from '../../src/sql/SqlError.js';
import { NEXMARK_SQL_DIR, nexmarkSql } from '../helpers/nexmarkSql.js';

describe('the SQL parser', () => {
  it("parses every statement of the Nexmark suite's DDL and queries", () => {
    for (const file of fs.readdirSync(NEXMARK_SQL_DIR)) {
      const statements = parseStatements(nexmarkSql(path.basename(file, '.sql'), { events: 1000 }));
      expect(statements.length, file).toBeGreaterThan(0);
    }
  });

  it('reads computed columns, the watermark, nested ROW types and options of a CREATE TABLE', () => {
    const [{ statement }] = parseStatements(nexmarkSql('ddl_gen', { events: 1000 })) as [ParsedStatement];
    expect(statement.k).toBe('createTable');
    const table = statement as unknown as { columns: { name: string; type?: { fields?: unknown[] }; expr?: unknown }[]; watermark: { column: string }; options: Record<string, string> };
    expect(table.columns.map((c) => c.name)).toEqual(['event_type', 'person', 'auction', 'bid', 'dateTime']);
    expect(table.columns[3]!.type!.fields).toHaveLength(7);
    expect(table.columns[4]!.expr).toBeDefined();
    expect(table.watermark.column).toBe('dateTime');
    expect(table.options.connector).toBe('nexmark');
  });

  it('gives a syntax error its code, line and column, with a caret under the place', () => {
    let error: unknown;
    try {
      parseStatements("SET 'a' = 'b';\nSELECT a,\n  FROM t");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SqlError);
    const sql = error as SqlError;
    expect(sql.code).toBe('SPW_ERR_SQL_SYNTAX');
    expect([sql.line, sql.column]).toEqual([3, 3]);
    expect(sql.message).toContain('\n  FROM t\n  ^');
  });
});

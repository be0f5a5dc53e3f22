import type { Client } from 'pg';
import type { ErrorCode } from '../../errors/Errors.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, redactUrl, serviceError, withTimeout } from '../ServiceConnection.js';

/** Who connects (`the PostgreSQL source`), for errors; and how. */
export interface PostgresConnectOptions {
  code: ErrorCode;
  who: string;
  connectTimeout?: number;
}

/**
 * A node-postgres client, connected. A connection lost later fails the query that meets
 * it (and so the task); one that is refused, or not ready within `connectTimeout`, is a
 * coded error naming the URL.
 */
export async function connectPostgres(url: string, options: PostgresConnectOptions): Promise<Client> {
  const { default: pg } = await import('pg');
  const connectTimeout = options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeout, keepAlive: true });
  // A connection that breaks between queries says so here (unhandled, it would end the thread); the next query fails.
  client.on('error', () => undefined);
  const what = `${options.who} cannot connect to PostgreSQL at ${redactUrl(url)}`;
  try {
    await withTimeout(client.connect(), connectTimeout + 1000, options.code, what, () => void client.end().catch(() => undefined));
  } catch (error) {
    void client.end().catch(() => undefined);
    throw serviceError(options.code, what, error);
  }
  return client;
}

/** An identifier as SQL: double-quoted (its case kept), inner quotes doubled. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A table name, `name` or `schema.name`, as SQL: each part quoted, unless written quoted already. */
export function quoteName(name: string): string {
  const parts = name.match(/"(?:[^"]|"")*"|[^.]+/g) ?? [name];
  return parts.map((part) => (part.startsWith('"') ? part : quoteIdent(part))).join('.');
}

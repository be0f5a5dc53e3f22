/**
 * The real services the connector tests talk to, Redis and PostgreSQL (no mock), and a
 * scope of each per test: a key prefix, a schema, removed when the test ends however it
 * ends. A service that does not answer fails the test that needs it, saying which one,
 * where it was looked for, and the command that starts it.
 */
import crypto from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { test } from 'vitest';

export const REDIS_URL = process.env.SPILLWAY_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const POSTGRES_URL = process.env.SPILLWAY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

type Service = 'Redis' | 'PostgreSQL';

/** How each service is started on this kind of machine (and in CI, which runs on it). */
const START: Record<Service, string> = {
  Redis: 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no',
  PostgreSQL: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
};

const checked = new Map<Service, Promise<void>>();

/**
 * Resolves once `service` answers; else rejects, naming the service, the URL and the
 * command that starts it. Checked once per test file's process.
 */
export function requireService(service: Service): Promise<void> {
  let check = checked.get(service);
  if (check === undefined) {
    check = checkService(service, service === 'Redis' ? REDIS_URL : POSTGRES_URL);
    checked.set(service, check);
  }
  return check;
}

/** Resolves once `service` answers at `url`; else rejects, naming it, the URL and the command that starts it. */
export function checkService(service: Service, url: string): Promise<void> {
  return (service === 'Redis' ? pingRedis(url) : pingPostgres(url)).catch((error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${service} does not answer at ${url} (${reason}): these tests need it running. Start it with\n  ${START[service]}`);
  });
}

async function pingRedis(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 2000, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => void (lastError = error));
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw lastError ?? error;
  } finally {
    redis.disconnect();
  }
}

async function pingPostgres(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A test's own part of Redis: every key it makes starts with `prefix`. */
export interface RedisScope {
  url: string;
  prefix: string;
  /** A client of the test's own. */
  client: Redis;
  /** `prefix` + name. */
  key(name: string): string;
}

/** A test's own part of PostgreSQL: a schema, which `url` makes the connection's default (search_path). */
export interface PostgresScope {
  /** The database's URL with `options=-c search_path=<schema>`: unqualified tables are the schema's. */
  url: string;
  schema: string;
  client: pg.Client;
  /** `schema.name`. */
  table(name: string): string;
}

const unique = (): string => crypto.randomBytes(5).toString('hex');

/** Deletes every key of Redis that matches `pattern` (SCAN, not KEYS). */
export async function deleteKeys(client: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
}

/**
 * A key prefix of its own, removed by `onCleanup`: its keys and the commit keys of sinks
 * named after them (`spillway:sink:<prefix>...`).
 */
export async function redisScope(onCleanup: (cleanup: () => Promise<void>) => void): Promise<RedisScope> {
  await requireService('Redis');
  const prefix = `spillway-test:${unique()}:`;
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  client.on('error', () => undefined);
  await client.connect();
  onCleanup(async () => {
    try {
      await deleteKeys(client, `${prefix}*`);
      await deleteKeys(client, `spillway:sink:${prefix}*`);
    } finally {
      client.disconnect();
    }
  });
  return { url: REDIS_URL, prefix, client, key: (name) => `${prefix}${name}` };
}

/** A schema of its own, dropped with all it holds by `onCleanup`. */
export async function postgresScope(onCleanup: (cleanup: () => Promise<void>) => void): Promise<PostgresScope> {
  await requireService('PostgreSQL');
  const schema = `spillway_test_${unique()}`;
  const url = withSearchPath(POSTGRES_URL, schema);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  await client.connect();
  onCleanup(async () => {
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await client.end().catch(() => undefined);
    }
  });
  await client.query(`CREATE SCHEMA "${schema}"`);
  return { url, schema, client, table: (name) => `${schema}.${name}` };
}

/** `url` with `options=-c search_path=<schema>` (libpq's startup options). */
export function withSearchPath(url: string, schema: string): string {
  // encodeURIComponent, not URLSearchParams: libpq's URL reading takes a '+' as it is, not as a space.
  return `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * vitest's `test` with a `redis` and a `postgres` scope, each made only for a test that
 * asks for it and removed after it, however it ends.
 */
export const serviceTest = test
  // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
  .extend('redis', async ({}, { onCleanup }) => redisScope(onCleanup))
  // eslint-disable-next-line no-empty-pattern -- as above
  .extend('postgres', async ({}, { onCleanup }) => postgresScope(onCleanup));

/**
 * The registry of source kinds: one spec per kind, each in a file of its own. A new
 * source is its spec's file, its shape in JobDefinition's `Source` union, and its line
 * here (the compiler checks that every kind of the union has one).
 */
import { InvalidJobError } from '../job/InvalidJobError.js';
import type { Source, SourceKind, SourceOf, StageDefinition } from '../job/JobDefinition.js';
import { CSV_SOURCE } from './csv/CsvSource.js';
import { GENERATE_SOURCE } from './GenerateSource.js';
import { JSON_LINES_SOURCE } from './jsonLines/JsonLinesSource.js';
import { PARQUET_SOURCE } from './parquet/ParquetSource.js';
import { NEXMARK_SOURCE } from './nexmark/NexmarkSource.js';
import { POSTGRES_SOURCE } from './postgres/PostgresSource.js';
import { REDIS_STREAM_SOURCE } from './redis/RedisStreamSource.js';
import type { SourceSpec } from './SourceSpec.js';
import { TEXT_SOURCE } from './text/TextSource.js';

const SPECS: { readonly [K in SourceKind]: SourceSpec<SourceOf<K>> } = {
  text: TEXT_SOURCE,
  generate: GENERATE_SOURCE,
  jsonLines: JSON_LINES_SOURCE,
  csv: CSV_SOURCE,
  parquet: PARQUET_SOURCE,
  nexmark: NEXMARK_SOURCE,
  redisStream: REDIS_STREAM_SOURCE,
  postgres: POSTGRES_SOURCE,
};

export const SOURCE_KINDS = Object.keys(SPECS) as SourceKind[];

/** The spec of a normalized source. */
export function sourceSpec<S extends Source>(source: S): SourceSpec<S> {
  return SPECS[source.kind] as unknown as SourceSpec<S>;
}

/** At submission, in the JobManager: what each source of the (validated) stages reads is there; throws a coded error if not. */
export function checkSources(stages: readonly StageDefinition[]): void {
  for (const { source } of stages) if (source !== undefined) sourceSpec(source).check?.(source);
}

/**
 * A source in the `kind` shape; the old shapes without one (`{ text }`, `{ generate }`)
 * are given theirs. Refuses anything else with SPW_ERR_INVALID_JOB naming the known kinds.
 */
export function normalizeSource(source: unknown): Source {
  return normalizeKind(source, SPECS, 'source', SOURCE_KINDS) as Source;
}

/** `value` with its `kind`: as it is if it has a registered one, or the one registered kind among its keys. */
export function normalizeKind(value: unknown, specs: object, what: string, kinds: readonly string[]): { kind: string } {
  const refuse = (how: string): InvalidJobError => new InvalidJobError(`unknown ${what} ${how}: a ${what} is one of the kinds ${kinds.join(', ')}`);
  if (value === null || typeof value !== 'object') throw refuse(JSON.stringify(value) ?? String(value));
  const { kind } = value as { kind?: unknown };
  if (kind !== undefined) {
    if (typeof kind !== 'string' || !Object.hasOwn(specs, kind)) throw refuse(`kind ${JSON.stringify(kind)}`);
    return value as { kind: string };
  }
  const keys = Object.keys(value).filter((key) => Object.hasOwn(specs, key));
  if (keys.length !== 1) throw refuse(`with the fields ${JSON.stringify(Object.keys(value))}`);
  return { kind: keys[0], ...value };
}

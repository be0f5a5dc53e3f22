/**
 * The registry of source kinds: one spec per kind, each in a file of its own with the
 * shape of its definition. A new source is its spec's file and its registration here.
 */
import { KindRegistry } from '../job/KindRegistry.js';
import { CSV_SOURCE } from './csv/CsvSource.js';
import { GENERATE_SOURCE } from './GenerateSource.js';
import { JSON_LINES_SOURCE } from './jsonLines/JsonLinesSource.js';
import { PARQUET_SOURCE } from './parquet/ParquetSource.js';
import { NEXMARK_SOURCE } from './nexmark/NexmarkSource.js';
import { POSTGRES_SOURCE } from './postgres/PostgresSource.js';
import { REDIS_STREAM_SOURCE } from './redis/RedisStreamSource.js';
import type { SourceSpec } from './SourceSpec.js';
import { TEXT_SOURCE } from './text/TextSource.js';

/** The built-in sources, each registered below; `Source` is the union of their definitions. */
const BUILTIN_SOURCES = [TEXT_SOURCE, GENERATE_SOURCE, JSON_LINES_SOURCE, CSV_SOURCE, PARQUET_SOURCE, NEXMARK_SOURCE, REDIS_STREAM_SOURCE, POSTGRES_SOURCE] as const;

/** Where a stage's records come from, told apart by its `kind`: the definition of a registered spec. */
export type Source = DefinitionOf<(typeof BUILTIN_SOURCES)[number]>;

/** The kinds of source; what each means to the engine is its spec. */
export type SourceKind = Source['kind'];
export type SourceOf<K extends SourceKind> = Extract<Source, { kind: K }>;

type DefinitionOf<S> = S extends SourceSpec<infer D> ? D : never;

const SOURCES = new KindRegistry<SourceSpec<Source>>('source');
for (const spec of BUILTIN_SOURCES) SOURCES.register(spec as SourceSpec<Source>);

export const SOURCE_KINDS = SOURCES.kinds as SourceKind[];

/** The spec of a normalized source. */
export function sourceSpec<S extends Source>(source: S): SourceSpec<S> {
  return SOURCES.spec(source.kind) as unknown as SourceSpec<S>;
}

/** At submission, in the JobManager: what each source of the (validated) stages reads is there; throws a coded error if not. */
export function checkSources(stages: readonly { source?: Source }[]): void {
  for (const { source } of stages) if (source !== undefined) sourceSpec(source).check?.(source);
}

/**
 * A source in the `kind` shape; the old shapes without one (`{ text }`, `{ generate }`)
 * are given theirs. Refuses anything else with SPW_ERR_INVALID_JOB naming the known kinds.
 */
export function normalizeSource(source: unknown): Source {
  return SOURCES.normalize(source) as Source;
}

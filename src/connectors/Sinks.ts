/**
 * The registry of sink kinds: one spec per kind, each in a file of its own with the
 * shape of its definition. A new sink is its spec's file and its registration here.
 */
import { KindRegistry } from '../job/KindRegistry.js';
import { COLLECT_SINK } from './CollectSink.js';
import { CSV_SINK } from './csv/CsvSink.js';
import { DISCARD_SINK } from './DiscardSink.js';
import { JSON_LINES_SINK } from './jsonLines/JsonLinesSink.js';
import { PARQUET_SINK } from './parquet/ParquetSink.js';
import { PARTITIONED_SINK } from './PartitionedSink.js';
import { POSTGRES_SINK } from './postgres/PostgresSink.js';
import { REDIS_STREAM_SINK } from './redis/RedisStreamSink.js';
import type { SinkSpec } from './SinkSpec.js';
import { TEXT_SINK } from './text/TextSink.js';

/** The built-in sinks, each registered below; `Sink` is the union of their definitions. */
const BUILTIN_SINKS = [COLLECT_SINK, TEXT_SINK, DISCARD_SINK, JSON_LINES_SINK, CSV_SINK, PARQUET_SINK, REDIS_STREAM_SINK, POSTGRES_SINK, PARTITIONED_SINK] as const;

/** Where a stage's records go, told apart by its `kind`: the definition of a registered spec. */
export type Sink = DefinitionOf<(typeof BUILTIN_SINKS)[number]>;

export type SinkKind = Sink['kind'];
export type SinkOf<K extends SinkKind> = Extract<Sink, { kind: K }>;

type DefinitionOf<S> = S extends SinkSpec<infer D> ? D : never;

const SINKS = new KindRegistry<SinkSpec<Sink>>('sink');
for (const spec of BUILTIN_SINKS) SINKS.register(spec as SinkSpec<Sink>);

export const SINK_KINDS = SINKS.kinds as SinkKind[];

/** The spec of a normalized sink. */
export function sinkSpec<K extends Sink>(sink: K): SinkSpec<K> {
  return SINKS.spec(sink.kind) as unknown as SinkSpec<K>;
}

/** A sink in the `kind` shape; the old shapes (`{ collect: true }`, `{ text }`) are given theirs. */
export function normalizeSink(sink: unknown): Sink {
  return SINKS.normalize(sink) as Sink;
}

/**
 * The registry of sink kinds: one spec per kind, each in a file of its own; a new sink
 * is its spec's file, its shape in JobDefinition's `Sink` union, and its line here.
 */
import type { Sink, SinkKind, SinkOf } from '../job/JobDefinition.js';
import { COLLECT_SINK } from './CollectSink.js';
import { CSV_SINK } from './csv/CsvSink.js';
import { DISCARD_SINK } from './DiscardSink.js';
import { JSON_LINES_SINK } from './jsonLines/JsonLinesSink.js';
import { PARQUET_SINK } from './parquet/ParquetSink.js';
import { PARTITIONED_SINK } from './PartitionedSink.js';
import { POSTGRES_SINK } from './postgres/PostgresSink.js';
import { REDIS_STREAM_SINK } from './redis/RedisStreamSink.js';
import type { SinkSpec } from './SinkSpec.js';
import { normalizeKind } from './Sources.js';
import { TEXT_SINK } from './text/TextSink.js';

const SPECS: { readonly [K in SinkKind]: SinkSpec<SinkOf<K>> } = {
  collect: COLLECT_SINK,
  text: TEXT_SINK,
  discard: DISCARD_SINK,
  jsonLines: JSON_LINES_SINK,
  csv: CSV_SINK,
  parquet: PARQUET_SINK,
  redisStream: REDIS_STREAM_SINK,
  postgres: POSTGRES_SINK,
  partitioned: PARTITIONED_SINK,
};

export const SINK_KINDS = Object.keys(SPECS) as SinkKind[];

/** The spec of a normalized sink. */
export function sinkSpec<K extends Sink>(sink: K): SinkSpec<K> {
  return SPECS[sink.kind] as unknown as SinkSpec<K>;
}

/** A sink in the `kind` shape; the old shapes (`{ collect: true }`, `{ text }`) are given theirs. */
export function normalizeSink(sink: unknown): Sink {
  return normalizeKind(sink, SPECS, 'sink', SINK_KINDS) as Sink;
}

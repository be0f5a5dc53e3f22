/**
 * The `spillway` package: what a job module imports. The typed builder first, then
 * the job model it produces (which an untyped .mjs job may also write by hand), and
 * the checked access to submitted params.
 */
export { JobBuilder, type JsonValue } from './job/api/JobBuilder.js';
export {
  AllWindowedStream,
  ConnectedStreams,
  KeyedStream,
  Stream,
  WindowedStream,
  type Accumulator,
  type AllWindowResult,
  type Combine,
  type Emit,
  type TimestampOptions,
  type WindowOptions,
  type WindowResult,
} from './job/api/Stream.js';
export { session, sliding, tumbling, type WindowAssigner } from './runtime/windows/WindowAssigner.js';
export type { CoProcessFunction, ProcessContext, ProcessFunction, TimerAccess, TimerContext, WindowAggregate } from './runtime/operators/ProcessFunction.js';
export type { KeyedStateAccess, ListState, MapState, ValueState } from './runtime/state/KeyedState.js';
export type { ExchangeScalar, Exchangeable, Key, NotExchangeable } from './job/api/Exchangeable.js';
export type { ExchangeOptions, PartitionTypeName } from './job/api/JobPlan.js';
export type { JobParams, JobFactory } from './job/api/JobFactory.js';
export { InvalidJobError } from './job/JobDefinition.js';
export { validateJob } from './job/JobValidation.js';
export type {
  CombineByKey,
  JobDefinition,
  JobModule,
  KeyFn,
  OnError,
  Operator,
  OperatorKind,
  OperatorOf,
  Partitioning,
  Sink,
  SinkKind,
  Source,
  SourceKind,
  StageDefinition,
  StageInput,
} from './job/JobDefinition.js';
// The connectors' options: file formats and their compression.
export type { Compression } from './connectors/compression/Compression.js';
export type { CsvColumnType, CsvColumnTypes, CsvReadOptions, CsvValue, CsvWriteOptions } from './connectors/csv/CsvOptions.js';
export type { ParquetCompression, ParquetSchema, ParquetType, ParquetValue } from './connectors/parquet/ParquetSchema.js';
// The connectors' options and records: Redis streams and PostgreSQL.
export type { RedisStreamEntry, RedisStreamReadOptions, RedisStreamWriteOptions } from './connectors/redis/RedisOptions.js';
export type { PostgresReadOptions, PostgresWriteOptions } from './connectors/postgres/PostgresOptions.js';
// What a keyed fold of one's own (Stream.fold) is written with.
export { foldPartitions, MAX_SPILL_DEPTH, SPILL_PARTITIONS, spillPartition, type SpillingFold } from './runtime/memory/KeyPartitions.js';
export type { OperatorMemory } from './runtime/memory/OperatorMemory.js';
export type { RecordSink } from './runtime/memory/RecordSink.js';
export type { SpillFile, SpillOutput } from './runtime/memory/OperatorMemory.js';
export { numberParam, requireString } from './job/Params.js';

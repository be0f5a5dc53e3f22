/**
 * The `spillway` package: what a job module imports. The typed builder first, then
 * the job model it produces (which an untyped .mjs job may also write by hand), and
 * the checked access to submitted params.
 */
export { JobBuilder } from './job/api/JobBuilder.js';
export { KeyedStream, Stream, type Accumulator, type Combine, type Emit } from './job/api/Stream.js';
export type { ExchangeScalar, Exchangeable, Key, NotExchangeable } from './job/api/Exchangeable.js';
export type { ExchangeOptions, PartitionTypeName } from './job/api/JobPlan.js';
export type { JobParams, JobFactory } from './job/api/JobFactory.js';
export { InvalidJobError, validateJob } from './job/JobDefinition.js';
export type { CombineByKey, JobDefinition, JobModule, KeyFn, Operator, Partitioning, Sink, Source, StageDefinition, StageInput } from './job/JobDefinition.js';
export { numberParam, requireString } from './job/builtins/Params.js';

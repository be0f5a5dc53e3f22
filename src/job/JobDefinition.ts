/**
 * What a user writes: a job is a small DAG of stages. A stage reads a source or the
 * outputs of earlier stages (each input an exchange), runs a chain of record
 * operators in one task with no serialization between them, and ends in a sink or
 * feeds later stages. The shapes of operators, sources and sinks are their specs' own
 * (src/runtime/operators/, src/connectors/), their unions their registries'; the checks
 * of a job are JobValidation.ts's.
 */

import type { CompressionCodec } from '../network/buffer/CompressionCodec.js';
import type { Operator } from '../runtime/operators/Operators.js';
import type { Sink } from '../connectors/Sinks.js';
import type { Source } from '../connectors/Sources.js';
import type { Partitioning } from './Partitioning.js';
import { InvalidJobError } from './InvalidJobError.js';

export { InvalidJobError };
export type { Key, KeyFn } from './KeyFn.js';
export type { Partitioning } from './Partitioning.js';
export type { Operator, OperatorKind, OperatorOf } from '../runtime/operators/Operators.js';
export type { Accumulate } from '../runtime/operators/Accumulate.js';
export type { CombineByKey } from '../runtime/operators/CombineByKey.js';
export type { Source, SourceKind, SourceOf } from '../connectors/Sources.js';
export type { Sink, SinkKind, SinkOf } from '../connectors/Sinks.js';
export type { OnError } from '../connectors/MalformedInput.js';

export interface StageInput {
  from: string;
  partitioning: Partitioning;
  /** The partition type of this edge (a registered name); the job's `exchange` when absent. */
  exchange?: string;
  /**
   * Compress this edge's buffers (where its type allows): `true` for the default codec
   * (snappy), or a codec's name (`'brotli'`); the job's `compression` when absent.
   */
  compression?: boolean | CompressionCodec;
}

export interface StageDefinition {
  name: string;
  source?: Source;
  inputs?: StageInput[];
  operators?: Operator[];
  sink?: Sink;
  /** Defaults to the job's parallelism, which bounds it. */
  parallelism?: number;
}

export interface JobDefinition {
  name: string;
  stages: StageDefinition[];
}

/** A user's module exports a JobDefinition, or a function of the submitted params that returns one. */
export type JobModule = JobDefinition | ((params: Record<string, unknown>) => JobDefinition);

export function defineJob(module: JobModule, params: Record<string, unknown>): JobDefinition {
  return typeof module === 'function' ? module(params) : module;
}

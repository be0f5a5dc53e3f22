import { checkpointsSchema, type CheckpointOptions } from '../checkpoint/CheckpointOptions.js';
import { restartSchema, type RestartStrategyName } from '../failover/RestartStrategy.js';

/** The body of POST /jobs. */
export interface SubmitBody {
  job?: string;
  name?: string;
  module?: string;
  params?: Record<string, unknown>;
  parallelism?: number;
  exchange?: string;
  compression?: boolean | string;
  bufferTimeout?: number;
  restart?: { strategy: RestartStrategyName } & Record<string, unknown>;
  checkpoints?: Partial<CheckpointOptions> & { interval: number };
  /** A savepoint's (or retained checkpoint's) folder to start from. */
  savepoint?: string;
  /** Start from a savepoint whose topology differs: state of stages that changed is dropped. */
  allowNonRestoredState?: boolean;
}

/** POST /jobs's body schema: an unknown field (a typo such as "paralellism") is an error, not silently dropped. */
export const submitSchema = {
  type: 'object',
  properties: {
    job: { type: 'string', minLength: 1 },
    module: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    name: { type: 'string' },
    params: { type: 'object' },
    parallelism: { type: 'integer', minimum: 1, maximum: 1024 },
    exchange: { type: 'string', minLength: 1 },
    // true, false or a codec's name: checked by compressionCodec(), whose message names the codecs.
    compression: {},
    bufferTimeout: { type: 'integer', minimum: -1 },
    restart: restartSchema,
    checkpoints: checkpointsSchema,
    savepoint: { type: 'string', minLength: 1 },
    allowNonRestoredState: { type: 'boolean' },
  },
  additionalProperties: false,
  anyOf: [{ required: ['job'] }, { required: ['module'] }],
} as const;

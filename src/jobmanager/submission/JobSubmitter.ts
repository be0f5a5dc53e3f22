import { codeOf, SpillwayError } from '../../errors/Errors.js';
import { BUILTIN_JOBS, isBuiltinJob } from '../../job/BuiltinJobs.js';
import { validatedJob, type ValidatedJob } from '../../job/ValidatedJob.js';
import { operatorSpec } from '../../runtime/operators/Operators.js';
import { savepointAt } from '../checkpoint/CheckpointCoordinator.js';
import { checkpointIntact, fingerprintChanges, fingerprintOf, type CheckpointMetadata } from '../checkpoint/CheckpointMetadata.js';
import { checkpointOptions } from '../checkpoint/CheckpointOptions.js';
import type { JobLoader } from '../../job/JobLoader.js';
import { checkSources } from '../../connectors/Sources.js';
import { compressionCodec } from '../../network/buffer/CompressionCodec.js';
import { hasPartitionType, partitionType, UnknownPartitionTypeError } from '../../network/networkThread/partition/PartitionTypes.js';
import { DEFAULT_BUFFER_TIMEOUT } from '../../network/taskThread/writer/RecordWriter.js';
import type { JobReference } from '../../rpc/TaskDeployment.js';
import type { JobSubmission } from '../jobs/Job.js';
import { ModuleSandbox } from './ModuleSandbox.js';
import type { Modules } from './Modules.js';
import { DEFAULT_RESTART, restartStrategy, type RestartStrategy } from '../failover/RestartStrategy.js';
import type { SubmitBody } from './SubmitBody.js';

export interface SubmitterOptions {
  /** The parallelism of a job that names none: the cluster's slots now. */
  defaultParallelism(): number;
  /** The restart strategy of a job that names none. */
  restart?: RestartStrategy;
  /** Where uploaded modules are written to be imported. */
  importsDir: string;
  moduleLoadTimeoutMs: number;
  /** Where jobs' checkpoints go unless a job says otherwise (--checkpoint-dir). */
  checkpointDir?: string;
}

/**
 * Turns a POST /jobs body into a job the scheduler can run: the job's code found (a
 * built-in, or an uploaded module loaded in a sandbox thread with a time limit, so that
 * its code cannot stop the JobManager's), its definition validated, its exchanges,
 * codec and restart strategy checked. A submission refused is a 400 whose code says why
 * (SPW_ERR_UNKNOWN_JOB, SPW_ERR_MODULE, SPW_ERR_INVALID_JOB, ...).
 */
export class JobSubmitter {
  /** Modules being loaded for a submission, with how many loads of each are under way. */
  private readonly defining = new Map<string, number>();
  private readonly sandbox: ModuleSandbox;

  constructor(
    private readonly modules: Modules,
    private readonly loader: JobLoader,
    private readonly options: SubmitterOptions,
  ) {
    this.sandbox = new ModuleSandbox(options.moduleLoadTimeoutMs);
  }

  /** Ends the sandbox thread kept for the next submission. */
  close(): Promise<void> {
    return this.sandbox.close();
  }

  /** Modules in use by a submission now: the sweeper must not take their files away meanwhile. */
  modulesInUse(): Iterable<string> {
    return this.defining.keys();
  }

  async submission(body: SubmitBody): Promise<JobSubmission> {
    const params = body.params ?? {};
    const parallelism = body.parallelism ?? Math.max(1, this.options.defaultParallelism());
    const ref = this.reference(body, params);
    try {
      const compression = compressionCodec(body.compression);
      const fallback = this.options.restart ?? DEFAULT_RESTART;
      const restart = body.restart ? restartStrategy(body.restart, fallback) : fallback;
      const validated = await this.define(ref, parallelism);
      checkExchanges(validated, body.exchange);
      const checkpoints = body.checkpoints === undefined ? undefined : checkpointOptions(body.checkpoints, this.options.checkpointDir);
      if (checkpoints) checkCheckpointable(validated, body.exchange);
      // A restored job goes on as the one it was: its sinks' transactions commit with its checkpoints.
      if (body.savepoint !== undefined && checkpoints === undefined) throw new SpillwayError('SPW_ERR_CHECKPOINT_CONFIG', 'a job started from a savepoint takes checkpoints: give it "checkpoints" (spillway submit --checkpoint-interval MS)');
      const savepoint = body.savepoint === undefined ? undefined : restorable(body.savepoint, validated, body.allowNonRestoredState === true);
      return {
        checkpoints,
        savepoint,
        name: body.name ?? validated.name ?? body.job ?? 'job',
        validated,
        ref,
        parallelism,
        exchange: partitionType(body.exchange ?? 'pipelined'),
        compression,
        bufferTimeout: body.bufferTimeout ?? DEFAULT_BUFFER_TIMEOUT,
        restart,
      };
    } catch (error) {
      throw refused(error);
    }
  }

  /** Which code the body names: an uploaded module, or a built-in job. */
  private reference(body: SubmitBody, params: Record<string, unknown>): JobReference {
    if (body.module !== undefined) {
      if (!this.modules.has(body.module)) throw refused(new SpillwayError('SPW_ERR_MODULE', `no uploaded module ${body.module}; POST it to /modules first`));
      this.modules.touch(body.module);
      return { module: body.module, params };
    }
    const name = body.job!;
    if (!isBuiltinJob(name)) throw refused(new SpillwayError('SPW_ERR_UNKNOWN_JOB', `unknown job "${name}"; the built-in jobs are ${Object.keys(BUILTIN_JOBS).join(', ')}`));
    return { builtin: name, params };
  }

  /** A job's definition, validated once: a built-in's here, an uploaded module's in a sandbox thread. */
  private async define(ref: JobReference, parallelism: number): Promise<ValidatedJob> {
    if (ref.module === undefined) {
      const validated = validatedJob(await this.loader.load(ref), parallelism);
      checkSources(validated.stages);
      return validated;
    }
    const hash = ref.module;
    this.defining.set(hash, (this.defining.get(hash) ?? 0) + 1);
    try {
      await this.loader.prepare(ref);
      return await this.sandbox.load({ dir: this.options.importsDir, ref, parallelism });
    } finally {
      const left = this.defining.get(hash)! - 1;
      if (left === 0) this.defining.delete(hash);
      else this.defining.set(hash, left);
      this.modules.touch(hash);
    }
  }
}

/** A job that takes checkpoints has only pipelined edges and no operator that holds its records until its input ends (none of which can be snapshotted). */
function checkCheckpointable(validated: ValidatedJob, exchange: string | undefined): void {
  for (const stage of validated.stages) {
    for (const op of stage.operators ?? []) {
      if (operatorSpec(op).endsOnly) throw new SpillwayError('SPW_ERR_CHECKPOINT_CONFIG', `stage "${stage.name}": ${op.kind} holds its records until its input ends, which a checkpoint cannot keep; a job with checkpoints keeps its state in windows or process()`);
    }
    for (const input of stage.inputs ?? []) {
      const type = partitionType(input.exchange ?? exchange ?? 'pipelined');
      if (!type.isPipelined || type.isReReadable) throw new SpillwayError('SPW_ERR_CHECKPOINT_CONFIG', `stage "${stage.name}": its input from "${input.from}" is a ${type.name} exchange; a job with checkpoints has pipelined edges only`);
    }
  }
}

/**
 * The savepoint a job starts from, checked: every state file it names is there, intact;
 * its topology is the job's (stages, operator kinds, inputs, key groups) unless
 * `allowNonRestored` drops what changed, and no stage grows past the max parallelism.
 */
function restorable(folder: string, { stages, parallelism }: ValidatedJob, allowNonRestored: boolean): CheckpointMetadata {
  const savepoint = savepointAt(folder);
  // Refused now, not at its tasks' restore, where each attempt would fail on the same file until the restarts run out.
  const damage = checkpointIntact(savepoint);
  if (damage !== undefined) throw new SpillwayError('SPW_ERR_CHECKPOINT_CORRUPT', `the savepoint at ${folder} cannot be restored: ${damage}`);
  const changes = fingerprintChanges(savepoint.fingerprint, fingerprintOf(stages));
  if (changes.length > 0 && !allowNonRestored) {
    throw new SpillwayError('SPW_ERR_SAVEPOINT_MISMATCH', `the savepoint at ${folder} was taken of another topology: ${changes.join('; ')} (allowNonRestoredState drops the state that does not fit)`);
  }
  for (const stage of stages) {
    if ((stage.parallelism ?? parallelism) > savepoint.fingerprint.maxParallelism) {
      throw new SpillwayError('SPW_ERR_RESTORE', `stage "${stage.name}" cannot run at ${stage.parallelism ?? parallelism} from a savepoint of ${savepoint.fingerprint.maxParallelism} key groups`);
    }
  }
  if (changes.length === 0) return savepoint;
  // What changed is dropped: only the stages whose shape is unchanged take their state back.
  const now = fingerprintOf(stages).stages;
  const same = new Set(savepoint.fingerprint.stages.filter((s) => JSON.stringify(s) === JSON.stringify(now.find((n) => n.name === s.name))).map((s) => s.name));
  const keep = <T>(byStage: Record<string, T>): Record<string, T> => Object.fromEntries(Object.entries(byStage).filter(([stage]) => same.has(stage)));
  return { ...savepoint, tasks: keep(savepoint.tasks), sources: keep(savepoint.sources) };
}

/**
 * Every partition type the job names, as its default or on an edge, is one this
 * JobManager knows; in an unbounded job, every edge is pipelined (a partition that is
 * read only once its producer finished would never be read).
 */
function checkExchanges({ stages, bounded }: ValidatedJob, exchange: string | undefined): void {
  if (exchange !== undefined && !hasPartitionType(exchange)) throw unknownType(`exchange: `, exchange);
  const unbounded = !bounded;
  for (const stage of stages) {
    for (const input of stage.inputs ?? []) {
      const name = input.exchange ?? exchange ?? 'pipelined';
      if (!hasPartitionType(name)) throw unknownType(`stage "${stage.name}": the input from "${input.from}": `, name);
      const type = partitionType(name);
      if (unbounded && (!type.isPipelined || type.isReReadable)) {
        throw new SpillwayError('SPW_ERR_UNBOUNDED_JOB', `stage "${stage.name}": its input from "${input.from}" is a ${name} exchange, and this job reads an unbounded source: every edge of it must be pipelined`);
      }
    }
  }
}

function unknownType(where: string, name: string): SpillwayError {
  return new SpillwayError('SPW_ERR_UNKNOWN_PARTITION_TYPE', `${where}${new UnknownPartitionTypeError(name).message}`);
}

/**
 * A submission refused: a 400 whatever its cause, with the cause's code (SPW_ERR_INVALID_JOB
 * for one without), so that a source folder that does not exist is the client's mistake.
 */
function refused(error: unknown): SpillwayError {
  if (error instanceof SpillwayError && (error as { statusCode?: number }).statusCode === 400) return error;
  const message = error instanceof Error ? error.message : String(error);
  return Object.assign(new SpillwayError(codeOf(error, 'SPW_ERR_INVALID_JOB'), message, { cause: error }), { statusCode: 400 });
}

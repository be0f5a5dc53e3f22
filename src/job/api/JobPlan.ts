import type { CompressionCodec } from '../../network/buffer/CompressionCodec.js';
import { InvalidJobError, type JobDefinition, type Operator, type Partitioning, type Sink, type Source, type StageDefinition, type StageInput } from '../JobDefinition.js';

/** A partition type by name: the built-in ones, or one a TaskManager loaded as a plug-in. */
export type PartitionTypeName = 'pipelined' | 'blocking' | 'sort-merge' | 'hybrid' | (string & {});

/** How one exchange is made, beyond its partitioning. */
export interface ExchangeOptions {
  /**
   * The partition type of this edge; without it, the job's `exchange` (POST /jobs, or
   * `spillway submit --exchange`). Written as the edge's `exchange` field of the job
   * definition.
   */
  exchange?: PartitionTypeName;
  /**
   * Compress this edge's buffers: `true` for the default codec (snappy), or a codec's
   * name; written as the edge's `compression` field, as `exchange`.
   */
  compression?: boolean | CompressionCodec;
}

/** A stage input as the builder writes it: the model's, plus the per-edge fields of ExchangeOptions. */
export type PlannedInput = StageInput & ExchangeOptions;

/** An input while the job is built: the stage it reads, and how. */
export interface DraftInput {
  from: StageDraft;
  partitioning: Partitioning;
  options: ExchangeOptions;
}

/**
 * One stage while a job is built. Its operators only grow at the end, and only until
 * the stage feeds an exchange or a sink: a stream that goes on after either would
 * change what they read. `sealedBy` says what closed it, for the error.
 */
export class StageDraft {
  explicitName: string | undefined;
  parallelism: number | undefined;
  readonly operators: Operator[] = [];
  sink: Sink | undefined;
  private sealedBy: string | undefined;

  constructor(
    readonly id: number,
    /** What the stage starts with (`text`, `generate`, `reduce`, ...): the base of its default name. */
    readonly kind: string,
    readonly source: Source | undefined,
    readonly inputs: readonly DraftInput[],
  ) {}

  /** The stage's name for errors, before names are settled. */
  get label(): string {
    return this.explicitName ?? `#${this.id + 1} (${this.kind})`;
  }

  /** Appends a chained operator to the stream that ends at `at`; returns where the stream now ends. */
  append(at: number, op: Operator): number {
    const what = op.kind;
    if (this.sealedBy !== undefined) {
      throw new InvalidJobError(`cannot ${what} in stage ${this.label}: it already ${this.sealedBy}; call .forward() first to go on in a stage of its own`);
    }
    this.checkEnd(at, what);
    this.operators.push(op);
    return this.operators.length;
  }

  /** Lets the stream that ends at `at` feed an exchange; a stage may feed several. */
  feed(at: number, what: string): void {
    if (this.sink !== undefined) throw new InvalidJobError(`cannot ${what} from stage ${this.label}: it ends in a sink`);
    this.checkEnd(at, what);
    this.sealedBy ??= `feeds an exchange (${what})`;
  }

  /** Ends the stream that ends at `at` in a sink. */
  end(at: number, what: string, sink: Sink): void {
    if (this.sealedBy !== undefined) throw new InvalidJobError(`cannot ${what} in stage ${this.label}: it already ${this.sealedBy}; call .forward() first`);
    this.checkEnd(at, what);
    this.sink = sink;
    this.sealedBy = `ends in a sink (${what})`;
  }

  private checkEnd(at: number, what: string): void {
    if (at !== this.operators.length) {
      throw new InvalidJobError(`cannot ${what} in stage ${this.label}: its stream was already continued with another operator; call .forward() to branch`);
    }
  }
}

/** The stages of one job in the order they were made, which is a topological order. */
export class JobPlan {
  private readonly drafts: StageDraft[] = [];

  add(kind: string, source: Source | undefined, inputs: readonly DraftInput[] = []): StageDraft {
    const draft = new StageDraft(this.drafts.length, kind, source, inputs);
    this.drafts.push(draft);
    return draft;
  }

  owns(draft: StageDraft): boolean {
    return this.drafts[draft.id] === draft;
  }

  /** The job definition: stages without a name of their own are named after their kind, numbered when it repeats. */
  toDefinition(name: string): JobDefinition {
    const names = this.settleNames();
    return { name, stages: this.drafts.map((draft) => toStage(draft, names)) };
  }

  private settleNames(): Map<StageDraft, string> {
    const taken = new Set(this.drafts.flatMap((d) => (d.explicitName === undefined ? [] : [d.explicitName])));
    const names = new Map<StageDraft, string>();
    for (const draft of this.drafts) {
      let name = draft.explicitName;
      if (name === undefined) {
        name = draft.kind;
        for (let n = 2; taken.has(name); n++) name = `${draft.kind}-${n}`;
        taken.add(name);
      }
      names.set(draft, name);
    }
    return names;
  }
}

function toStage(draft: StageDraft, names: Map<StageDraft, string>): StageDefinition {
  const stage: StageDefinition = { name: names.get(draft)! };
  if (draft.source !== undefined) stage.source = draft.source;
  if (draft.inputs.length > 0) stage.inputs = draft.inputs.map((input) => toInput(input, names));
  if (draft.operators.length > 0) stage.operators = [...draft.operators];
  if (draft.sink !== undefined) stage.sink = draft.sink;
  if (draft.parallelism !== undefined) stage.parallelism = draft.parallelism;
  return stage;
}

function toInput({ from, partitioning, options }: DraftInput, names: Map<StageDraft, string>): PlannedInput {
  const input: PlannedInput = { from: names.get(from)!, partitioning };
  if (options.exchange !== undefined) input.exchange = options.exchange;
  if (options.compression !== undefined) input.compression = options.compression;
  return input;
}

/** The options that are set, so that a job definition carries no `undefined` fields (a required one is set, so the type stays). */
export function definedOf<O extends object>(options: O): O {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as O;
}

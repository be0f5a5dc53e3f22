import type { Operator, Partitioning } from '../../job/JobDefinition.js';
import type { ManagedMemory } from '../memory/ManagedMemory.js';
import type { Chain, Combiner, Emit, Step } from '../Chain.js';
import type { StreamContext } from '../StreamContext.js';

/**
 * Where an operator may stand in a stage: anywhere in its chain, or only first, in a
 * stage of exactly `inputs` inputs, each partitioned as `partitioning` says if it says.
 */
export type Placement = 'anywhere' | { first: { inputs: number; partitioning?: Partitioning['type'] } };

/** One input of a stage, read to its end by an operator that reads its stage's inputs itself (a join). */
export interface InputReader {
  /** Hands each record to `push`, waiting where it has to; resolves once the input has ended. */
  forEach(push: Emit): Promise<void>;
}

/** What an operator is compiled with, once per task. */
export interface OperatorContext {
  /** The task's share of managed memory; an operator that holds data keeps within `memory.operatorBudget`. */
  readonly memory: ManagedMemory;
  /** Event time, wall-clock timers, keyed state and the task's metrics. */
  readonly stream: StreamContext;
  /** The operator, for errors: its kind, stage and place ("window #2 of stage count"). */
  readonly owner: string;
}

/** A first operator that reads its stage's inputs together, a record at a time, each tagged with its input (a connected process, a windowed join). */
export interface InputsStep {
  push(input: number, record: unknown): void | Promise<void>;
  end(): Promise<void>;
  watermark?: Chain['watermark'];
}

/**
 * What the engine knows of an operator kind, in one file per kind (as a partition type
 * carries its behaviour, src/network/networkThread/partition/PartitionType.ts): validation, the
 * planner, the memory budget and the task ask the spec, never the operator's shape.
 * Registered in src/runtime/operators/Operators.ts.
 */
export interface OperatorSpec<Op extends Operator = Operator> {
  /** The operator's `kind`; also the key of its one field in the old key-only shape (`{ map: f }`). */
  readonly kind: Op['kind'];
  /** Whether it holds records (until its input ends, or as keyed state), and so takes an equal share of its slot's managed memory. */
  readonly holdsData: boolean;
  /** Whether it gives out its records only when its input ends: an unbounded job, whose input never does, refuses it. */
  readonly endsOnly?: boolean;
  /** Where it may stand in a stage; validateJob refuses it anywhere else. */
  readonly placement: Placement;
  /**
   * Checks the operator's own fields (what a hand-written job may get wrong): returns
   * what is wrong, as the end of a sentence, or undefined when nothing is.
   */
  validate(op: Op): string | undefined;
  /**
   * Compiles the operator in front of `next` (whose `end` is called once when the input
   * has ended): once per task, into closures a record goes through with no look-up.
   * Data it holds keeps within `context.memory.operatorBudget` and spills past it. Absent
   * for an operator that reads its stage's inputs (`readInputs`, `compileInputs`).
   */
  compile?(op: Op, next: Chain, context: OperatorContext): Step;
  /**
   * For a first operator that reads its stage's inputs together, record by record, each
   * tagged with its input (a connected process, a windowed join).
   */
  compileInputs?(op: Op, next: Chain, context: OperatorContext): InputsStep;
  /**
   * For a first operator that reads its stage's inputs itself (a join, which reads one
   * input to its end before the other): reads `input(g)` for each of its inputs and
   * pushes its records into the rest of the chain, `push`.
   */
  readInputs?(op: Op, input: (g: number) => InputReader, push: Emit, context: OperatorContext): Promise<void>;
  /**
   * As the first operator of a stage: the combiner that a producing task applies to
   * what it sends over a hash-partitioned input (a map-side combine), or absent if
   * none applies. The operator must then take the combined records as its input.
   */
  mapSideCombiner?(op: Op): Combiner;
  /** As the first operator of a stage: how producers route what they send it, if not by the input's own `partitioning`. */
  routing?(op: Op, partitioning: Partitioning): Partitioning;
}

/** A field that must be a function: what is wrong with it, or undefined. */
export function notAFunction(name: string, value: unknown): string | undefined {
  return typeof value === 'function' ? undefined : `needs a function ${name}, not ${value === null ? 'null' : typeof value}`;
}

/** The keys of an operator of two inputs (`owner.keys`): a key function for each, input 0's first. */
export function keyPairProblem(owner: string, keys: unknown): string | undefined {
  if (!Array.isArray(keys) || keys.length !== 2) return 'needs keys: [a key function of input 0, one of input 1]';
  return firstProblem(...[0, 1].map((i) => notAFunction(`${owner}.keys[${i}]`, keys[i])));
}

/** The first of the problems found, or undefined. */
export function firstProblem(...problems: (string | undefined)[]): string | undefined {
  return problems.find((p) => p !== undefined);
}

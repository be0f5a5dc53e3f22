import { SpillwayError } from '../errors/Errors.js';
import type { Operator } from '../job/JobDefinition.js';
import { ManagedMemory } from './memory/ManagedMemory.js';
import type { Chain, Emit } from './Chain.js';
import type { InputsStep } from './operators/OperatorSpec.js';
import { operatorSpec } from './operators/Operators.js';
import { StreamContext } from './StreamContext.js';

/** What a chain is compiled with beyond its operators and its output. */
export interface ChainOptions {
  /** The task's event time, timers and state; a bounded one of its own when absent. */
  stream?: StreamContext;
  /** The stage's name, for errors. */
  stage?: string;
  /** Where the watermarks that leave the chain go; nowhere when absent. */
  watermark?: Chain['watermark'];
}

/**
 * Compiles a stage's chained operators into nested functions around the output, each
 * as its spec says, so a record goes through the whole chain in one call with no
 * serialization, queue or look-up between operators (Renoir's block, Flink's operator
 * chaining). Done once per task. Operators that hold data keep within their share of
 * `memory` and spill past it; without one they hold everything. An operator that
 * reads its stage's inputs itself (a join) is run by its task, not chained: leave it out.
 */
export function compileChain(
  operators: readonly Operator[],
  output: Emit,
  endOutput: () => Promise<void>,
  memory = ManagedMemory.unbounded(),
  options: ChainOptions = {},
): Chain {
  const stream = options.stream ?? new StreamContext(true);
  let next: Chain = { push: output, end: endOutput, watermark: options.watermark ?? (() => undefined) };
  for (let i = operators.length - 1; i >= 0; i--) {
    const op = operators[i];
    const spec = operatorSpec(op);
    if (!spec.compile) throw new SpillwayError('SPW_ERR_INTERNAL', `a ${op.kind} reads its stage's inputs itself: it is run by its task, not chained`);
    const step = spec.compile(op, next, { memory, stream, owner: owner(op, i, options.stage) });
    next = { push: step.push, end: step.end, watermark: step.watermark ?? next.watermark };
  }
  return next;
}

/**
 * A stage whose first operator reads its inputs together (compileInputs): that
 * operator in front of the chain of the others.
 */
export function compileInputs(operators: readonly Operator[], output: Chain, memory: ManagedMemory, options: ChainOptions & { stream: StreamContext }): Required<InputsStep> {
  const [first, ...rest] = operators;
  const spec = operatorSpec(first);
  if (!spec.compileInputs) throw new SpillwayError('SPW_ERR_INTERNAL', `a ${first.kind} does not read its stage's inputs together`);
  const chain = compileChain(rest, output.push, output.end, memory, { ...options, watermark: output.watermark });
  const step = spec.compileInputs(first, chain, { memory, stream: options.stream, owner: owner(first, 0, options.stage) });
  return { push: step.push, end: step.end, watermark: step.watermark ?? chain.watermark };
}

function owner(op: Operator, index: number, stage: string | undefined): string {
  return stage === undefined ? `${op.kind} #${index}` : `${op.kind} #${index} of stage ${stage}`;
}

import { compressionCodec } from '../network/buffer/CompressionCodec.js';
import { normalizeSink, sinkSpec } from '../connectors/Sinks.js';
import { normalizeSource, sourceSpec } from '../connectors/Sources.js';
import { normalizeOperator, operatorSpec } from '../runtime/operators/Operators.js';
import type { Placement } from '../runtime/operators/OperatorSpec.js';
import { SpillwayError } from '../errors/Errors.js';
import { InvalidJobError } from './InvalidJobError.js';
import type { JobDefinition, Operator, StageDefinition, StageInput } from './JobDefinition.js';

/**
 * Checks the graph before anything runs: names unique, inputs exist, acyclic, each
 * stage has exactly one of source or inputs, every sink reachable from a source,
 * parallelism a positive integer, every operator of a known kind, with its fields,
 * where its spec lets it stand. Returns the stages in topological order, their
 * operators in the `kind` shape (the old key-only shape normalized).
 */
export function validateJob(job: JobDefinition, parallelism: number): StageDefinition[] {
  if (!job || typeof job !== 'object' || !Array.isArray(job.stages)) {
    throw new InvalidJobError('a job needs a list of stages');
  }
  if (!Number.isInteger(parallelism) || parallelism < 1) {
    throw new InvalidJobError(`parallelism must be a positive integer, not ${parallelism}`);
  }
  const byName = new Map<string, StageDefinition>();
  for (const stage of job.stages) {
    if (!stage || typeof stage.name !== 'string' || stage.name === '') throw new InvalidJobError('every stage needs a name');
    if (byName.has(stage.name)) throw new InvalidJobError(`stage name "${stage.name}" is used twice`);
    byName.set(stage.name, normalizeStage(stage));
  }
  const stages = [...byName.values()];
  for (const stage of stages) checkStage(stage, byName, parallelism);
  const order = topologicalOrder(stages, byName);
  checkReachability(stages);
  checkEventTime(order);
  if (!isBounded(order)) checkUnbounded(order);
  return order;
}

/** An operator that works in event time (a window) has a timestamp assigner before it, in its stage or upstream. */
function checkEventTime(stages: readonly StageDefinition[]): void {
  const timestamped = timestampedStages(stages);
  for (const stage of stages) {
    const operators = stage.operators ?? [];
    operators.forEach((op, i) => {
      if (operatorSpec(op).eventTime !== 'reads') return;
      const assigned = operators.slice(0, i).some(assignsTimestamps) || (stage.inputs ?? []).every((input) => timestamped.has(input.from));
      if (!assigned) throw new InvalidJobError(`stage "${stage.name}": ${op.kind} works in event time: give its input timestamps with assignTimestamps first`);
    });
  }
}

/** An unbounded job's operators all give out records before their input ends: one that waits for the end would wait forever. */
function checkUnbounded(stages: readonly StageDefinition[]): void {
  for (const stage of stages) {
    for (const op of stage.operators ?? []) {
      if (!operatorSpec(op).endsOnly) continue;
      throw new SpillwayError(
        'SPW_ERR_UNBOUNDED_JOB',
        `stage "${stage.name}": ${op.kind} gives out its records only when its input ends, and this job reads an unbounded source: use a window (keyBy(k).window(w).aggregate(...)) or process() instead`,
      );
    }
  }
}

/** The stage with its source, operators and sink in the `kind` shape (the old key-only shapes normalized). */
export function normalizeStage(stage: StageDefinition): StageDefinition {
  if (stage.operators !== undefined && !Array.isArray(stage.operators)) throw new InvalidJobError(`stage "${stage.name}": operators must be a list`);
  try {
    const normal: StageDefinition = { ...stage };
    if (stage.source !== undefined) normal.source = normalizeSource(stage.source);
    if (stage.operators !== undefined) normal.operators = stage.operators.map(normalizeOperator);
    if (stage.sink !== undefined) normal.sink = normalizeSink(stage.sink);
    return normal;
  } catch (error) {
    throw new InvalidJobError(`stage "${stage.name}": ${(error as Error).message}`);
  }
}

/**
 * The stages whose records carry event timestamps across their output edges: those
 * with a timestamp assigner, and every stage downstream of one.
 */
export function timestampedStages(stages: readonly StageDefinition[]): Set<string> {
  const byName = new Map(stages.map((stage) => [stage.name, stage]));
  const known = new Map<string, boolean>();
  const timestamped = (name: string): boolean => {
    const seen = known.get(name);
    if (seen !== undefined) return seen;
    known.set(name, false);
    const stage = byName.get(name)!;
    const own = (stage.operators ?? []).some(assignsTimestamps);
    const result = own || (stage.inputs ?? []).some((input) => byName.has(input.from) && timestamped(input.from));
    known.set(name, result);
    return result;
  };
  return new Set(stages.map((stage) => stage.name).filter(timestamped));
}

/** Whether an operator gives its records their event timestamps (and makes the watermarks from them). */
export function assignsTimestamps(op: Operator): boolean {
  return operatorSpec(op).eventTime === 'assigns';
}

/** Whether every source of the job ends; a job with an unbounded source runs until it is canceled. */
export function isBounded(stages: readonly StageDefinition[]): boolean {
  return stages.every((stage) => stage.source === undefined || sourceSpec(stage.source).bounded(stage.source));
}

function checkStage(stage: StageDefinition, byName: Map<string, StageDefinition>, parallelism: number): void {
  const inputs = stage.inputs ?? [];
  if ((stage.source ? 1 : 0) + (inputs.length > 0 ? 1 : 0) !== 1) {
    throw new InvalidJobError(`stage "${stage.name}" needs either a source or inputs`);
  }
  for (const input of inputs) {
    if (!byName.has(input.from)) throw new InvalidJobError(`stage "${stage.name}" reads unknown stage "${input.from}"`);
    const type = input.partitioning?.type;
    if (!['hash', 'range', 'rebalance', 'forward', 'broadcast'].includes(type)) {
      throw new InvalidJobError(`stage "${stage.name}": unknown partitioning "${type}"`);
    }
    if (input.exchange !== undefined && (typeof input.exchange !== 'string' || input.exchange === '')) {
      throw new InvalidJobError(`stage "${stage.name}": the exchange of its input from "${input.from}" must name a partition type, not ${JSON.stringify(input.exchange)}`);
    }
    try {
      compressionCodec(input.compression);
    } catch (error) {
      throw new InvalidJobError(`stage "${stage.name}": its input from "${input.from}": ${(error as Error).message}`);
    }
  }
  const p = stage.parallelism ?? parallelism;
  if (!Number.isInteger(p) || p < 1) throw new InvalidJobError(`stage "${stage.name}": parallelism must be a positive integer, not ${p}`);
  for (const input of inputs) {
    const upstream = byName.get(input.from)!.parallelism ?? parallelism;
    if (input.partitioning.type === 'forward' && upstream !== p) {
      throw new InvalidJobError(`stage "${stage.name}": a forward input needs equal parallelism, but "${input.from}" has ${upstream} and it has ${p}`);
    }
  }
  if (p > parallelism) throw new InvalidJobError(`stage "${stage.name}": parallelism ${p} exceeds the job's ${parallelism}`);
  checkOperators(stage, inputs);
  const source = stage.source && sourceSpec(stage.source).validate(stage.source);
  if (source !== undefined) throw new InvalidJobError(`stage "${stage.name}": its ${stage.source!.kind} source ${source}`);
  const sink = stage.sink && sinkSpec(stage.sink).validate(stage.sink);
  if (sink !== undefined) throw new InvalidJobError(`stage "${stage.name}": its ${stage.sink!.kind} sink ${sink}`);
}

/** Each operator's fields and place, as its spec says; a stage of several inputs needs a first operator that reads them. */
function checkOperators(stage: StageDefinition, inputs: readonly StageInput[]): void {
  const operators = stage.operators ?? [];
  operators.forEach((op, i) => {
    const spec = operatorSpec(op);
    const problem = spec.validate(op);
    if (problem !== undefined) throw new InvalidJobError(`stage "${stage.name}": operator ${i} (${op.kind}) ${problem}`);
    if (!fits(spec.placement, i, inputs)) throw new InvalidJobError(`stage "${stage.name}": ${op.kind} must be ${placementRule(spec.placement)}`);
  });
  const first = operators[0];
  if (inputs.length > 1 && (first === undefined || operatorSpec(first).placement === 'anywhere')) {
    throw new InvalidJobError(`stage "${stage.name}" has ${inputs.length} inputs; only a join reads more than one`);
  }
}

function fits(placement: Placement, index: number, inputs: readonly StageInput[]): boolean {
  if (placement === 'anywhere') return true;
  const { inputs: count, partitioning } = placement.first;
  return index === 0 && inputs.length === count && (partitioning === undefined || inputs.every((input) => input.partitioning?.type === partitioning));
}

function placementRule(placement: Placement): string {
  if (placement === 'anywhere') return 'anywhere';
  const { inputs, partitioning } = placement.first;
  const count = inputs === 1 ? 'one' : inputs === 2 ? 'two' : String(inputs);
  const kind = partitioning === undefined ? '' : ` ${partitioning}-partitioned`;
  return `the first operator of a stage with ${count}${kind} input${inputs === 1 ? '' : 's'}`;
}

function topologicalOrder(stages: StageDefinition[], byName: Map<string, StageDefinition>): StageDefinition[] {
  const state = new Map<string, 'visiting' | 'done'>();
  const order: StageDefinition[] = [];
  const visit = (stage: StageDefinition, path: string[]): void => {
    const seen = state.get(stage.name);
    if (seen === 'done') return;
    if (seen === 'visiting') {
      const cycle = [...path.slice(path.indexOf(stage.name)), stage.name].join(' -> ');
      throw new InvalidJobError(`the job graph has a cycle: ${cycle}`);
    }
    state.set(stage.name, 'visiting');
    for (const input of stage.inputs ?? []) visit(byName.get(input.from)!, [...path, stage.name]);
    state.set(stage.name, 'done');
    order.push(stage);
  };
  for (const stage of stages) visit(stage, []);
  return order;
}

function checkReachability(stages: StageDefinition[]): void {
  const sinks = stages.filter((s) => s.sink);
  if (sinks.length === 0) throw new InvalidJobError('the job has no sink');
  const consumed = new Set(stages.flatMap((s) => (s.inputs ?? []).map((i) => i.from)));
  for (const stage of stages) {
    if (!stage.sink && !consumed.has(stage.name)) {
      throw new InvalidJobError(`stage "${stage.name}" has neither a sink nor a stage reading it`);
    }
  }
  // Every stage has a source or inputs and the graph is acyclic, so every sink is reachable from a source.
}

import type { Partitioning, StageDefinition } from '../job/JobDefinition.js';
import type { Combiner } from './Chain.js';
import { normalizeOperator, operatorSpec } from './operators/Operators.js';

/** How a producing task feeds one input of a consumer stage. */
export interface EdgePlan {
  /** How records are routed to the consumer's subtasks. */
  routing: Partitioning;
  /** The map-side combine to apply before the exchange, if any. */
  combiner: Combiner | undefined;
}

/**
 * What the consumer's first operator asks of the producers of its input `input`: its
 * routing (combineByKey's [key, combiner] pairs go by key), and its map-side combiner
 * where the input is hash-partitioned, whatever the producing stage ends in.
 */
export function edgePlan(consumer: StageDefinition, input: number): EdgePlan {
  const partitioning = consumer.inputs![input].partitioning;
  const first = consumer.operators?.[0];
  if (first === undefined) return { routing: partitioning, combiner: undefined };
  const op = normalizeOperator(first);
  const spec = operatorSpec(op);
  return {
    routing: spec.routing?.(op, partitioning) ?? partitioning,
    combiner: partitioning.type === 'hash' ? spec.mapSideCombiner?.(op) : undefined,
  };
}

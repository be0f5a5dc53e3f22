import { notAFunction } from '../runtime/operators/OperatorSpec.js';
import { ownPosition, type SourceSpec } from './SourceSpec.js';

/** Records a function generates for subtask i of n. */
export type GenerateSourceDefinition = { kind: 'generate'; generate: (subtask: number, parallelism: number) => Iterable<unknown> };

/** Records between two turns of the task thread's event loop (flush timers, partition requests, a cancel). */
const RECORDS_PER_TURN = 4096;

/** `{ kind: 'generate', generate(subtask, parallelism) }`: the records a function yields for each subtask. */
export const GENERATE_SOURCE: SourceSpec<GenerateSourceDefinition> = {
  kind: 'generate',
  validate: (source) => notAFunction('generate', source.generate),
  bounded: () => true,
  /** Its position is how many records it gave: a restore runs the generator again and skips them (it must give the same records). */
  async read(source, context) {
    const iterator = source.generate(context.subtask, context.parallelism)[Symbol.iterator]();
    const skip = (ownPosition(context, 'generate') as number | undefined) ?? 0;
    let count = 0;
    for (let step = iterator.next(); !step.done; step = iterator.next()) {
      if (count < skip) {
        count++;
        continue;
      }
      const waiting = context.push(step.value);
      if (waiting) await waiting;
      const resumable = context.checkpointable(++count);
      if (resumable) await resumable;
      if (count % RECORDS_PER_TURN === 0) await context.pause();
    }
  },
};

import type { JobDefinition } from '../JobDefinition.js';
import { JobPlan } from './JobPlan.js';
import { Stream } from './Stream.js';

/**
 * Builds a job with types (Flink's ExecutionEnvironment, Renoir's StreamContext):
 * sources start streams, streams chain operators and exchanges, and build() returns
 * the same JobDefinition a hand-written job is, validated and run the same way.
 *
 *   const job = new JobBuilder('lengths');
 *   job.readText(input).map((line) => line.length).rebalance().collect();
 *   export default job.build();
 */
export class JobBuilder {
  private readonly plan = new JobPlan();

  constructor(readonly name: string) {}

  /** Lines of a text file, a folder of them or a glob, split across the stage's tasks by file and byte range. */
  readText(path: string): Stream<string> {
    return new Stream<string>(this.plan, this.plan.add('text', { text: path }), 0);
  }

  /**
   * The same text as chunks of whole lines (about 64 KiB of UTF-8 each): for a job
   * that scans bytes itself, such as the word count's byte-level counter. `reuse`:
   * every chunk in one buffer, valid only until the next operator is done with it;
   * for operators that keep nothing of a chunk (no emitting it, no holding it).
   */
  readTextChunks(path: string, options: { reuse?: boolean } = {}): Stream<Uint8Array> {
    const source = options.reuse ? { text: path, chunks: true, reuse: true } : { text: path, chunks: true };
    return new Stream<Uint8Array>(this.plan, this.plan.add('text', source), 0);
  }

  /** The records `generator` yields for task `subtask` of `parallelism`. */
  generate<T>(generator: (subtask: number, parallelism: number) => Iterable<T>): Stream<T> {
    return new Stream<T>(this.plan, this.plan.add('generate', { generate: generator }), 0);
  }

  /** The job definition of everything built so far; its validation runs when the job is submitted. */
  build(): JobDefinition {
    return this.plan.toDefinition(this.name);
  }
}

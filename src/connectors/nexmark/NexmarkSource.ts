import { ownPosition, type SourceSpec } from '../SourceSpec.js';
import { NexmarkGenerator, type NexmarkOptions } from './NexmarkGenerator.js';

/** The Nexmark benchmark's events (src/connectors/nexmark/): unbounded without `events`; paced in wall time when `rate` is given. */
export type NexmarkSourceDefinition = { kind: 'nexmark'; nexmark: NexmarkOptions };

/** Events between two turns of the task thread's event loop when the generator runs as fast as it can. */
const EVENTS_PER_TURN = 4096;
/** A paced generator sleeps when it is this far ahead of its wall-clock schedule, ms (smaller waits are timer noise). */
const PACE_SLACK_MS = 2;

/**
 * `{ kind: 'nexmark', nexmark: { events, rate, seed, baseTime } }`: the Nexmark event
 * generator (NexmarkGenerator.ts), subtask i of n taking the event numbers i, i + n, ...
 * of the one stream; `events` over all subtasks (unbounded without it). Event time is
 * spaced at `rate` events per second (10,000 by default); a `rate` given also paces the
 * generator in wall time, at that rate over all subtasks; without one it runs as fast
 * as it can.
 */
export const NEXMARK_SOURCE: SourceSpec<NexmarkSourceDefinition> = {
  kind: 'nexmark',
  validate: ({ nexmark: options }) => {
    if (options === null || typeof options !== 'object') return 'needs its options, nexmark: { events, rate, seed }';
    for (const name of ['events', 'rate', 'seed', 'baseTime'] as const) {
      const value = options[name];
      if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value))) return `needs ${name} as a number, not ${JSON.stringify(value)}`;
    }
    if (options.events !== undefined && (!Number.isInteger(options.events) || options.events < 0)) return `needs events as a whole number of 0 or more, not ${options.events}`;
    if (options.rate !== undefined && options.rate <= 0) return `needs a positive rate, not ${options.rate}`;
    return undefined;
  },
  bounded: ({ nexmark: options }) => options.events !== undefined,
  async read({ nexmark: options }, context) {
    const generator = new NexmarkGenerator(options, { index: context.subtask, count: context.parallelism });
    // Its position is how many events its split gave: the generator resumes there.
    const position = ownPosition(context, 'nexmark') as number | undefined;
    if (position !== undefined) generator.seek(position);
    const paced = options.rate !== undefined;
    const msPerEvent = paced ? 1000 / options.rate! : 0;
    // Paced from where it resumes: its next event is due now.
    const start = Date.now() - generator.nextEventNumber * msPerEvent;
    let count = 0;
    for (let event = generator.next(); event !== null; event = generator.next()) {
      const waiting = context.push(event);
      if (waiting) await waiting;
      const resumable = context.checkpointable(generator.position);
      if (resumable) await resumable;
      if (paced) {
        const ahead = start + generator.nextEventNumber * msPerEvent - Date.now();
        if (ahead > PACE_SLACK_MS) await context.sleep(ahead);
        else if (++count % EVENTS_PER_TURN === 0) await context.pause();
      } else if (++count % EVENTS_PER_TURN === 0) await context.pause();
    }
  },
};

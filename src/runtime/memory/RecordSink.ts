/** Takes one record; returns a promise only when it must wait (backpressure further down). */
export type RecordSink<T = unknown> = (record: T) => void | Promise<void>;

/** An operator that emits much at once yields to the event loop this often, so that cancels and flush timers get through. */
const YIELD_EVERY = 16_384;

/** Lets the event loop run (cancels, flush timers), then `checkpoint` throws if the task should stop. */
export async function pause(checkpoint: () => void): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  checkpoint();
}

/**
 * Passes every record to `emit`, waiting where it has to and yielding now and then;
 * `checkpoint` runs after each yield and throws to stop (a canceled task).
 */
export async function emitEach<T>(records: Iterable<T>, emit: RecordSink<T>, checkpoint: () => void = () => {}): Promise<void> {
  let count = 0;
  for (const record of records) {
    const waiting = emit(record);
    if (waiting) await waiting;
    else if (++count % YIELD_EVERY === 0) await pause(checkpoint);
  }
}

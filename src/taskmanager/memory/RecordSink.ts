/** Takes one record; returns a promise only when it must wait (backpressure further down). */
export type RecordSink = (record: unknown) => void | Promise<void>;

/** An operator that emits much at once yields to the event loop this often, so that cancels and flush timers get through. */
const YIELD_EVERY = 16_384;

/** Passes every record to `emit`, waiting where it has to and yielding now and then. */
export async function emitEach(records: Iterable<unknown>, emit: RecordSink): Promise<void> {
  let count = 0;
  for (const record of records) {
    const waiting = emit(record);
    if (waiting) await waiting;
    else if (++count % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

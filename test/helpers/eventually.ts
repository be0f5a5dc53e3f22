/**
 * The one way a test waits: on a condition, polled, never on a margin of time. The timeout is
 * only how long a test that will never pass takes to say so; a loaded machine makes the
 * condition come later, never false.
 */

/** What a probe answers while its condition does not hold yet. */
type NotYet = undefined | null | false;

export interface EventuallyOptions {
  /** How long to poll before failing (default 30 s). */
  timeoutMs?: number;
  /** The pause between two probes (default 25 ms). */
  everyMs?: number;
}

/** A pause between probes, or the pacing of a test's own actions (a chaos schedule): never a wait for something to happen. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until it answers something other than undefined, null or false, and returns that.
 * After `timeoutMs` it throws, saying what was awaited (`what` may be a function, read then, to
 * tell how far it got). A probe that throws fails the wait at once.
 */
export async function eventually<T>(what: string | (() => string | Promise<string>), probe: () => T | NotYet | Promise<T | NotYet>, options: EventuallyOptions | number = {}): Promise<T> {
  const { timeoutMs = 30_000, everyMs = 25 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined && found !== null && found !== false) return found;
    if (Date.now() > deadline) throw new Error(`not seen within ${timeoutMs} ms: ${typeof what === 'string' ? what : await what()}`);
    await sleep(everyMs);
  }
}

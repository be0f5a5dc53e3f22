import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * A full garbage collection of the calling thread's heap, on demand.
 *
 * V8 collects its old generation lazily: a fresh heap grows to over a hundred MiB, and a
 * grown one to several times what is live, before marking. An operator that lets go of
 * a table it counted against its budget (written to disk, or emitted) and fills the
 * next one would have V8 hold both, and the one after, and so on: in a task thread of
 * a 64 MiB budget, 150-180 MiB of heap. Collecting when a table is let go keeps the
 * heap near what the operators count. V8 gives `gc` only to contexts made while
 * --expose-gc is on: one such context is made, then the flag is turned off again.
 */
let collect: (() => void) | null = null;

export function collectGarbage(): void {
  collect ??= exposedGc();
  collect();
}

function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as () => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

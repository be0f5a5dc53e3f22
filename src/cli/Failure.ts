import { codeOf } from '../errors/Errors.js';

/** How the command line reports an error: `spillway: <code>: <message>` on stderr. */
export function printFailure(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`spillway: ${codeOf(error)}: ${message}`);
}

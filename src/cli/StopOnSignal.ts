import { printFailure } from './Failure.js';

/** Stops cleanly on SIGINT/SIGTERM, then exits (1 if stopping failed). */
export function stopOnSignal(stop: () => Promise<void>): void {
  const handler = (): void => {
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        printFailure(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
}

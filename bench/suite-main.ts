/** Runs the bench suite on its own: `node dist/bench/suite-main.js [--quick]`. */
import { runSuite } from './suite.js';

const result = await runSuite({ quick: process.argv.includes('--quick') });
// Failed targets are findings, not errors; a part that could not run at all is one.
process.exitCode = result.errors.length > 0 ? 1 : 0;

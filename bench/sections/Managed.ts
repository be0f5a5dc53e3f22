/**
 * `npm run bench -- --only managed [--quick]`: issue 13's managed-memory figures (bench/managed.ts:
 * a sort within its budget and at 4x past it, a join and a reduceByKey that spill, each
 * exact and within the memory bound), about 4 minutes in a quiet hour. Out of the
 * default suite, which took more than its 10 minutes with them in slow hours.
 */
import { MANAGED_FULL, MANAGED_QUICK, managedRows, measureManaged, type ManagedFigures } from '../managed.js';
import { printRows, type Row } from '../suite.js';
import type { BenchSection } from './Section.js';

export const MANAGED: BenchSection = {
  name: 'managed',
  about: 'managed memory: a sort within and 4x past its budget, a join and a reduceByKey that spill, exact, within the memory bound',
  async run(quick) {
    const figures: ManagedFigures = {};
    const errors: Row[] = [];
    await measureManaged(quick ? MANAGED_QUICK : MANAGED_FULL, figures, async (part, measure) => {
      console.error(`bench: ${part}`);
      try {
        await measure();
      } catch (error) {
        errors.push({ figure: `error in ${part}`, measured: error instanceof Error ? error.message : String(error), result: 'ERROR' });
      }
    });
    printRows((rows, target) => managedRows(figures, rows, target), errors);
    if (errors.length > 0) process.exitCode = 1;
    return figures;
  },
};

/**
 * `npm run bench -- --only cpu [--quick]`: issue 31's CPU-per-record figures alone, as the
 * suite measures and prints them (bench/cpu.ts: synthetic pipelined and blocking, the
 * keyed combine, msgpackr alone in turns), in about 2 minutes instead of the suite's 10:
 * what to rerun after a change to the data plane.
 */
import { withCluster } from '../cluster.js';
import { CPU_FULL, CPU_QUICK, measureCpu, type CpuFigures } from '../cpu.js';
import { cpuRows, printRows } from '../suite.js';
import type { BenchSection } from './Section.js';

export const CPU_SECTION: BenchSection = {
  name: 'cpu',
  about: 'CPU per shuffled record: synthetic pipelined and blocking, and combine, beside msgpackr alone',
  async run(quick) {
    const figures: CpuFigures = {};
    await withCluster({ slots: 1 }, (cluster) => measureCpu(cluster, quick ? CPU_QUICK : CPU_FULL, figures));
    printRows((rows, target) => cpuRows(figures, rows, target, null));
    return figures;
  },
};

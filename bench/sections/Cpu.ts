/**
 * `npm run bench -- --only cpu [--quick]`: issue 31's CPU-per-record figures alone, as the
 * suite measures them (bench/cpu.ts: synthetic pipelined and blocking, the keyed combine,
 * msgpackr alone in turns), in about 2 minutes instead of the suite's 10: what to rerun
 * after a change to the data plane.
 */
import { withCluster } from '../cluster.js';
import { measureCpu, type CpuFigures, type CpuRun, type CpuSizes } from '../cpu.js';
import type { BenchSection } from './Section.js';

const QUICK: CpuSizes = { repeats: 1, syntheticRecords: 1_000_000, combineRecords: 1_000_000, combineKeys: 1_000_000 };
const FULL: CpuSizes = { repeats: 3, syntheticRecords: 10_000_000, combineRecords: 10_000_000, combineKeys: 1_000_000 };

export const CPU_SECTION: BenchSection = {
  name: 'cpu',
  about: 'CPU per shuffled record: synthetic pipelined and blocking, and combine, beside msgpackr alone',
  async run(quick) {
    const figures: CpuFigures = {};
    await withCluster({ slots: 1 }, (cluster) => measureCpu(cluster, quick ? QUICK : FULL, figures));
    printCpu(figures);
    return figures;
  },
};

function printCpu({ packr, pipelined, blocking, combine }: CpuFigures): void {
  const baseline = packr?.best.nsPerRecord ?? NaN;
  console.log(`\nmsgpackr alone, pack and unpack in arrays of 1,000: ${baseline.toFixed(0)} ns a record (best of ${packr?.runs.length ?? 0})\n`);
  console.log('| job | exchange | records | records/s | MB/s | CPU ns/record | own ns/record (less msgpackr) |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  const row = (run: CpuRun | undefined): void => {
    if (run === undefined) return;
    console.log(`| ${run.job} | ${run.exchange} | ${run.records.toLocaleString('en-US')} | ${(run.recordsPerSec / 1e6).toFixed(2)} M | ${run.mbPerSec.toFixed(0)} | ${run.nsPerRecord.toFixed(0)} | ${(run.nsPerRecord - baseline).toFixed(0)} |`);
  };
  for (const figure of [pipelined, blocking, combine]) row(figure?.best);
  if (pipelined && blocking) console.log(`\nblocking against pipelined: ${(blocking.best.recordsPerSec / pipelined.best.recordsPerSec).toFixed(2)}x (target >= 0.75x)`);
}

/**
 * `npm run bench -- --only transport [--quick]`: the transport table (bench/transport.ts):
 * word tuples, 100 B and 1 KiB records and full buffers without records, over 1 and 4
 * channels of one connection, beside raw loopback TCP, medians of 3 (quick: 1). About
 * 80 s on a slow machine; out of the default suite, which keeps its own 1 KiB figure
 * against raw TCP in turns.
 */
import { DEFAULT_CASES, formatTransportReport, transportBenchmark } from '../transport.js';
import type { BenchSection } from './Section.js';

export const TRANSPORT: BenchSection = {
  name: 'transport',
  about: 'the transport table: records and full buffers over 1 and 4 channels of one connection, beside raw loopback TCP',
  async run(quick) {
    const report = await transportBenchmark(DEFAULT_CASES, quick ? 1 : 3);
    console.log(formatTransportReport(report));
    return report;
  },
};

/**
 * `npm run bench -- --only scale [--quick]`: what width costs (bench/scale.ts). The
 * control plane of two stages joined all-to-all at 1,000 / 2,500 / 5,000 / 10,000 wide
 * (quick: 1,000 / 2,500) on simulated TaskManagers of 10 slots, pipelined and blocking;
 * then `synthetic` on real processes: 2 TaskManagers at parallelism 2 (the baseline, same
 * run), 32 TaskManagers of 2 slots at 64 with 32 MiB and 8 MiB network memory, and 2 of
 * 32 slots at 64 (quick: 8 of 2 at 16, 1 M records). The chart lands beside the figures.
 */
import fs from 'node:fs';
import { resultPath, timestamp } from '../results.js';
import { measureControlPlane, measureDataPlane, type ControlPlaneRun, type DataPlaneRun } from '../scale.js';
import { scaleChartSvg } from '../scaleChart.js';
import { printRows } from '../suite.js';
import type { BenchSection } from './Section.js';

const WIDTHS = [1000, 2500, 5000, 10_000];
const QUICK_WIDTHS = [1000, 2500];

export const SCALE: BenchSection = {
  name: 'scale',
  about: 'control-plane time and heap against width on simulated TaskManagers; CPU a record against parallelism on real ones',
  async run(quick) {
    const control: ControlPlaneRun[] = [];
    for (const width of quick ? QUICK_WIDTHS : WIDTHS) for (const exchange of ['pipelined', 'blocking'] as const) control.push(measureControlPlane(width, exchange));
    const records = quick ? 1_000_000 : 10_000_000;
    const data: DataPlaneRun[] = [await measureDataPlane(2, 2, 2, '32mb', records)];
    if (quick) data.push(await measureDataPlane(8, 2, 16, '32mb', records));
    else for (const [tms, slots, memory] of [[32, 2, '32mb'], [32, 2, '8mb'], [2, 32, '32mb']] as const) data.push(await measureDataPlane(tms, slots, 64, memory, records));
    const baseline = data[0];
    printRows((rows, target) => {
      for (const r of control) {
        const total = r.buildMs + r.trackMs + r.deployMs + r.failoverMs;
        rows.push({
          figure: `control plane, ${r.width} x ${r.width} ${r.exchange} on ${r.taskManagers} TMs`,
          measured: `${total.toFixed(0)} ms (graph ${r.buildMs.toFixed(0)}, track ${r.trackMs.toFixed(0)}, deploy ${r.deployMs.toFixed(0)} for ${(r.deployBytes / 2 ** 20).toFixed(1)} MiB, failover ${r.failoverMs.toFixed(0)}); heap ${r.heapMiB.toFixed(0)} MiB; ${r.groups} group(s), ${r.regions} region(s)`,
          target: r.width === 10_000 ? 'heap < 1 GiB' : undefined,
          result: r.width === 10_000 ? target(`heap at ${r.width} ${r.exchange}`, r.heapMiB, r.heapMiB < 1024) : undefined,
        });
      }
      for (const r of data) {
        const ratio = r.nsPerRecord / baseline.nsPerRecord;
        const isBaseline = r === baseline;
        rows.push({
          figure: `synthetic, ${r.taskManagers} TM x ${r.slots} slots, parallelism ${r.parallelism}, ${r.memory} network memory`,
          measured: r.error ?? `${r.nsPerRecord.toFixed(0)} ns/record CPU, ${r.seconds.toFixed(2)} s${r.exact ? '' : ' NOT EXACT'}`,
          baseline: isBaseline ? undefined : `${baseline.nsPerRecord.toFixed(0)} ns, ${baseline.seconds.toFixed(2)} s`,
          ratio: isBaseline || r.error !== undefined ? undefined : `${ratio.toFixed(2)}x CPU, ${(r.seconds / baseline.seconds).toFixed(2)}x time`,
          target: isBaseline ? undefined : 'exact; CPU within 1.5x',
          result: isBaseline ? undefined : target(`synthetic at ${r.parallelism}`, ratio, r.error === undefined && r.exact && ratio <= 1.5),
        });
      }
    });
    const svg = resultPath(`${timestamp()}.scale`, 'svg');
    fs.writeFileSync(svg, await scaleChartSvg(control, data, `${quick ? 'quick, ' : ''}${new Date().toISOString().slice(0, 10)}`));
    console.log(`chart: ${svg}`);
    return { control, data };
  },
};

/**
 * The scale figures as an SVG chart (vega-lite, headless, as bench/chart.ts): the
 * control plane's time and heap against width, each exchange a line, and the cluster's
 * CPU a record against parallelism.
 */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { ControlPlaneRun, DataPlaneRun } from './scale.js';

export async function scaleChartSvg(control: readonly ControlPlaneRun[], data: readonly DataPlaneRun[], subtitle: string): Promise<string> {
  const controlValues = control.flatMap((r) => [
    { width: r.width, exchange: r.exchange, figure: 'control plane (ms): graph, tracking, deployments, failover', value: r.buildMs + r.trackMs + r.deployMs + r.failoverMs },
    { width: r.width, exchange: r.exchange, figure: 'JobManager heap kept (MiB)', value: r.heapMiB },
  ]);
  const dataValues = data.filter((r) => r.error === undefined).map((r) => ({ parallelism: r.parallelism, nsPerRecord: r.nsPerRecord, cluster: `${r.taskManagers} TM x ${r.slots} slots, ${r.memory}` }));
  const line = (field: string, title: string) => ({ field, type: 'quantitative', title }) as const;
  const spec: TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Spillway: what width costs', subtitle },
    hconcat: [
      {
        data: { values: controlValues },
        width: 300,
        height: 240,
        mark: { type: 'line', point: true },
        encoding: {
          x: line('width', 'width of each of two stages, all-to-all (1 simulated TM a 10 slots)'),
          y: line('value', 'ms / MiB'),
          color: { field: 'exchange', type: 'nominal' },
          strokeDash: { field: 'figure', type: 'nominal', legend: { orient: 'bottom', direction: 'vertical' } },
        },
      },
      {
        data: { values: dataValues },
        width: 260,
        height: 240,
        mark: { type: 'point', filled: true, size: 90 },
        encoding: { x: line('parallelism', 'parallelism (synthetic, all-to-all)'), y: line('nsPerRecord', 'whole-cluster CPU a record (ns)'), color: { field: 'cluster', type: 'nominal', legend: { orient: 'bottom', direction: 'vertical' } } },
      },
    ],
  };
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * The sweep as an SVG chart, drawn headless with vega-lite and vega (no canvas needed
 * for SVG): each buffer size and timeout is a point at its full-load throughput, a
 * vertical line from its p50 (filled) to its p99 (open) latency on a log scale.
 */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { SweepPoint } from './sweep.js';

interface Datum {
  buffer: string;
  timeout: string;
  throughput: number;
  p50: number;
  p99: number;
}

export async function sweepChartSvg(points: readonly SweepPoint[], subtitle: string): Promise<string> {
  const values: Datum[] = points.map((p) => ({
    buffer: p.bufferSize.replace(/kb$/i, ' KiB'),
    timeout: `${p.bufferTimeoutMs} ms`,
    throughput: p.recordsPerSec / 1e6,
    // A log scale has no zero: clamp to a microsecond.
    p50: Math.max(0.001, p.latency.p50Ms),
    p99: Math.max(0.001, p.latency.p99Ms),
  }));
  const x = { field: 'throughput', type: 'quantitative', title: 'throughput at full load (M records/s, synthetic 100 B)' } as const;
  const color = { field: 'buffer', type: 'nominal', title: 'buffer size', sort: values.map((v) => v.buffer) } as const;
  const shape = { field: 'timeout', type: 'nominal', title: 'buffer timeout', sort: values.map((v) => v.timeout) } as const;
  const latency = (field: 'p50' | 'p99') => ({ field, type: 'quantitative', scale: { type: 'log' }, title: 'record latency (ms, log)' }) as const;
  const spec: TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Spillway: latency against throughput', subtitle },
    width: 560,
    height: 360,
    data: { values },
    layer: [
      { mark: { type: 'rule', strokeWidth: 1.5 }, encoding: { x, y: latency('p50'), y2: { field: 'p99' }, color } },
      { mark: { type: 'point', filled: true, size: 90 }, encoding: { x, y: latency('p50'), color, shape } },
      { mark: { type: 'point', filled: false, size: 90, strokeWidth: 2 }, encoding: { x, y: latency('p99'), color, shape } },
    ],
  };
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

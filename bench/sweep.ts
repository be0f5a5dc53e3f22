/**
 * Latency against throughput: for each network buffer size (a new cluster each) and
 * buffer timeout, the synthetic job's throughput at full load, and the p50/p99 record
 * latency of a low-rate hash-shuffled stream (bench/jobs/latency-probe.mjs).
 */
import fs from 'node:fs';
import path from 'node:path';
import { runSynthetic, withCluster, type BenchCluster } from './cluster.js';
import { percentile, repeatRuns } from './measure.js';
import { packageRoot } from './results.js';

export const BUFFER_SIZES = ['4kb', '32kb', '128kb'] as const;
export const BUFFER_TIMEOUTS_MS = [0, 1, 100] as const;

export interface SweepOptions {
  /** Records of each full-load synthetic run. */
  throughputRecords: number;
  repeats: number;
  /** The probe's rate over all its sources, records/s. */
  probeRate: number;
  /** How long the probe measures, after its warm-up. */
  probeMs: number;
  probeWarmupMs: number;
  /** The buffer sizes swept, each on a cluster of its own; BUFFER_SIZES if absent. */
  bufferSizes?: readonly string[];
}

export interface LatencyFigures {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface SweepPoint {
  bufferSize: string;
  bufferTimeoutMs: number;
  recordsPerSec: number;
  /** records/s of every throughput run; recordsPerSec is their median. */
  throughputRuns: number[];
  latency: LatencyFigures;
}

const PROBE = path.join(packageRoot(), 'bench', 'jobs', 'latency-probe.mjs');

export async function runSweep(options: SweepOptions, progress: (message: string) => void = () => {}): Promise<SweepPoint[]> {
  const source = fs.readFileSync(PROBE, 'utf8');
  const points: SweepPoint[] = [];
  for (const bufferSize of options.bufferSizes ?? BUFFER_SIZES) {
    await withCluster({ bufferSize }, async (cluster) => {
      const probe = await cluster.upload(source);
      // The first run of a module on a fresh cluster loads it and opens the connections: not a latency to report.
      await measureLatency(cluster, probe, 1, { ...options, probeMs: 200 });
      for (const bufferTimeoutMs of BUFFER_TIMEOUTS_MS) {
        progress(`sweep: ${bufferSize} buffers, ${bufferTimeoutMs} ms timeout`);
        points.push(await measurePoint(cluster, probe, bufferSize, bufferTimeoutMs, options));
      }
    });
  }
  return points;
}

/**
 * With a timeout of 0 every record goes in a buffer of its own, some 20x slower than
 * the other points: a fifth of the records measures its rate in about the time the
 * others take.
 */
const UNBATCHED_RECORDS_SHARE = 1 / 5;
/** A point's warm-up run has 1/WARMUP_SHARE of its records. */
const WARMUP_SHARE = 5;

async function measurePoint(cluster: BenchCluster, probe: string, bufferSize: string, bufferTimeoutMs: number, options: SweepOptions): Promise<SweepPoint> {
  const records = Math.ceil(options.throughputRecords * (bufferTimeoutMs === 0 ? UNBATCHED_RECORDS_SHARE : 1));
  const run = async (n: number): Promise<number> => (await runSynthetic(cluster, n, 'pipelined', { bufferTimeout: bufferTimeoutMs })).run.recordsPerSec;
  // A run with the point's settings first, untimed, as every job figure has its warm-up job.
  await run(Math.ceil(records / WARMUP_SHARE));
  const throughput = await repeatRuns(options.repeats, () => run(records), (recordsPerSec) => recordsPerSec);
  return {
    bufferSize,
    bufferTimeoutMs,
    recordsPerSec: throughput.median,
    throughputRuns: throughput.runs,
    latency: await measureLatency(cluster, probe, bufferTimeoutMs, options),
  };
}

/** One probe run; its sink collects each measured record's latency in ms. */
async function measureLatency(cluster: BenchCluster, probe: string, bufferTimeout: number, options: SweepOptions): Promise<LatencyFigures> {
  const params = { rate: options.probeRate, durationMs: options.probeMs, warmupMs: options.probeWarmupMs, sources: 1 };
  const status = await cluster.run({ module: probe, params, exchange: 'pipelined', bufferTimeout });
  const latencies = (await cluster.result<number>(status.id)).sort((a, b) => a - b);
  return {
    samples: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.length === 0 ? Number.NaN : latencies[latencies.length - 1],
  };
}

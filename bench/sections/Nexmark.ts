/**
 * `npm run bench -- --only nexmark`: every Nexmark query over 2 M events (quick: 200 K) on
 * 2 TaskManagers x 1 slot at parallelism 2, rows discarded, cores counted as Nexmark
 * counts them (CPU seconds of every cluster process over the job's wall time): events
 * per second per core, beside the Flink 1.13 figure published with the Nexmark suite.
 * Then the latency figures, with the default buffer timeout: nexmark-q1 paced at 100 K
 * events/s (p99 from an event's generation, a source's latency marker, to the sink) and
 * nexmark-q5 paced at 50 K events/s (p99 from the watermark passing a window's end to the
 * sink, which its results reach before it).
 */
import { withCluster, type BenchCluster } from '../cluster.js';
import type { BenchSection } from './Section.js';

/** Flink 1.13's events per second per core, published with the Nexmark suite. */
const FLINK: Record<string, number> = { q0: 155_000, q1: 158_000, q2: 175_000, q3: 152_000, q4: 34_000, q5: 22_000, q7: 12_000, q8: 146_000, q11: 40_000 };
const PARALLELISM = 2;
/** The latency targets, ms. */
const Q1_P99_MS = 100;
const Q5_P99_MS = 500;

interface QueryFigure {
  query: string;
  events: number;
  seconds: number;
  cpuSeconds: number;
  eventsPerSecond: number;
  cores: number;
  eventsPerSecondPerCore: number;
  flink: number;
  pass: boolean;
}

interface LatencyFigure {
  query: string;
  rate: number;
  seconds: number;
  p50: number;
  p99: number;
  samples: number;
  target: number;
  pass: boolean;
}

/** One untimed run of a tenth of the events first, so that the timed one does not pay for the query's first JIT. */
async function runQuery(cluster: BenchCluster, query: string, events: number): Promise<QueryFigure> {
  await cluster.run({ job: `nexmark-${query}`, params: { events: Math.ceil(events / 10), sink: 'discard' }, parallelism: PARALLELISM });
  const cpu = cluster.cpuSeconds();
  const status = await cluster.run({ job: `nexmark-${query}`, params: { events, sink: 'discard' }, parallelism: PARALLELISM });
  const cpuSeconds = cluster.cpuSeconds() - cpu;
  const seconds = (status.ended! - status.started!) / 1000;
  const eventsPerSecondPerCore = events / cpuSeconds;
  return {
    query,
    events,
    seconds,
    cpuSeconds,
    eventsPerSecond: events / seconds,
    cores: cpuSeconds / seconds,
    eventsPerSecondPerCore,
    flink: FLINK[query],
    pass: eventsPerSecondPerCore >= FLINK[query],
  };
}

/** An unbounded query paced at `rate` for `seconds`: the sinks' latency over their last 20 s as the job reports it at the end, then it is canceled. */
async function runPaced(cluster: BenchCluster, query: string, rate: number, seconds: number, of: 'latency' | 'watermarkLatency', target: number): Promise<LatencyFigure> {
  const id = await cluster.submit({ job: `nexmark-${query}`, params: { rate, sink: 'discard' }, parallelism: PARALLELISM });
  try {
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    const status = await cluster.status(id);
    if (status.state !== 'RUNNING') throw new Error(`nexmark-${query} is ${status.state}: ${status.error ?? ''}`);
    const figures = status[of];
    if (figures === undefined) throw new Error(`nexmark-${query} reported no ${of} after ${seconds} s`);
    return { query, rate, seconds, p50: figures.p50, p99: figures.p99, samples: figures.count, target, pass: figures.p99 < target };
  } finally {
    await cluster.cancel(id).catch(() => undefined);
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function printQueries(figures: QueryFigure[]): void {
  console.log('\nNexmark, 2 TaskManagers x 1 slot, parallelism 2, rows discarded; cores = CPU seconds of every cluster process / wall time');
  console.log('query  events      wall s  events/s    cores  events/s/core  Flink 1.13  ratio  target');
  for (const f of figures) {
    console.log(
      `${f.query.padEnd(6)} ${fmt(f.events).padStart(10)}  ${f.seconds.toFixed(2).padStart(6)}  ${fmt(f.eventsPerSecond).padStart(9)}  ${f.cores.toFixed(2).padStart(5)}  ${fmt(f.eventsPerSecondPerCore).padStart(13)}  ${fmt(f.flink).padStart(10)}  ${(f.eventsPerSecondPerCore / f.flink).toFixed(2).padStart(5)}  ${f.pass ? 'PASS' : 'FAIL'}`,
    );
  }
}

function printLatency(figures: LatencyFigure[]): void {
  console.log('\nLatency, paced, default buffer timeout; p99 over the sinks\' latest samples');
  for (const f of figures) {
    const what = f.query === 'q1' ? 'event generation to the sink' : "watermark past a window's end to the sink";
    console.log(`nexmark-${f.query} at ${fmt(f.rate)} events/s for ${f.seconds} s: ${what}: p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms (${f.samples} samples); target p99 < ${f.target} ms: ${f.pass ? 'PASS' : 'FAIL'}`);
  }
}

export const NEXMARK: BenchSection = {
  name: 'nexmark',
  about: 'every Nexmark query, events per second per core beside Flink 1.13, and the latency of q1 and q5 paced',
  async run(quick) {
    const events = quick ? 200_000 : 2_000_000;
    // A bounded run's event time ends only with its input, so q4 and q8 hold every auction and person of 2 M events until then: 1 GiB of managed memory a TaskManager holds them.
    return withCluster({ taskManagers: 2, slots: 1, managedMemory: '1gb' }, async (cluster) => {
      const queries: QueryFigure[] = [];
      for (const query of Object.keys(FLINK)) {
        console.error(`bench: nexmark-${query} over ${events} events`);
        queries.push(await runQuery(cluster, query, events));
      }
      printQueries(queries);
      // Past the sinks' latency window (20 s) beyond a few seconds of start: the figures are of the job running, not starting.
      const seconds = 25;
      const latency = [await runPaced(cluster, 'q1', 100_000, seconds, 'latency', Q1_P99_MS), await runPaced(cluster, 'q5', 50_000, seconds, 'watermarkLatency', Q5_P99_MS)];
      printLatency(latency);
      return { queries, latency };
    });
  },
};

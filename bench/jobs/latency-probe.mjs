// Record latency at a low rate (bench/sweep.ts uploads this module to the JobManager).
// Sources emit [sequence, sentAt, measured] records at `rate` records/s in all for
// `warmupMs + durationMs`; they are hash-shuffled on the sequence number, and the sink
// stage turns each measured record into its latency in ms, which it collects.
// Params: rate (2000), durationMs (2000), warmupMs (500), sources (1: source subtask i
// shares slot i, so a single one spins on the first TaskManager only).
//
// Timestamps are wall-clock with sub-millisecond resolution (timeOrigin + now()), so
// they compare across the TaskManager processes of one machine.
//
// A generate source is a synchronous iterator: it cannot sleep. Between records it
// yields IDLE markers that a filter drops; the task yields to the event loop every few
// thousand of them, so flush timers and the network keep running. The sources thus spin
// a core while they wait, which the sweep reports beside its figures.
import { performance } from 'node:perf_hooks';

const IDLE = 0;

const now = () => performance.timeOrigin + performance.now();

function number(params, name, fallback) {
  const value = Number(params[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`parameter "${name}" must be a positive number`);
  return value;
}

/** Subtask i of n: every n-th record of the stream, offset so that the sources take turns. */
function* paced(rate, warmupMs, durationMs, subtask, parallelism) {
  const interval = (1000 * parallelism) / rate;
  const start = now();
  const end = start + warmupMs + durationMs;
  let due = start + (interval * subtask) / parallelism;
  for (let sequence = subtask; ; sequence += parallelism) {
    let t = now();
    while (t < due) {
      yield IDLE;
      t = now();
    }
    if (t >= end) return;
    yield [sequence, t, t - start >= warmupMs];
    due += interval;
  }
}

/** @param {{ rate?: number, durationMs?: number, warmupMs?: number, sources?: number }} params */
export default function latencyProbe(params) {
  const rate = number(params, 'rate', 2000);
  const durationMs = number(params, 'durationMs', 2000);
  const warmupMs = number(params, 'warmupMs', 500);
  const sources = Math.floor(number(params, 'sources', 1));
  return {
    name: 'latency-probe',
    stages: [
      {
        name: 'source',
        parallelism: sources,
        source: { generate: (subtask, parallelism) => paced(rate, warmupMs, durationMs, subtask, parallelism) },
        operators: [{ filter: (record) => record !== IDLE }],
      },
      {
        name: 'latency',
        inputs: [{ from: 'source', partitioning: { type: 'hash', key: (record) => record[0] } }],
        operators: [{ filter: (record) => record[2] }, { map: (record) => now() - record[1] }],
        sink: { collect: true },
      },
    ],
  };
}

// A job under backpressure (bench/sections/Checkpoints.ts uploads this module): a
// Nexmark source paced at `rate` events/s in all, rebalanced to a stage that lets through
// at most `sinkRate` events/s per subtask and drops them. With sinkRate a tenth of the
// source's share, every buffer between the two fills and stays full.
// Params: rate (events/s over all source subtasks), sinkRate (events/s per sink subtask).
//
// The sink waits with Atomics.wait, which blocks its task thread without spinning: the
// slowness costs no CPU, so the two cores stay free for the engine's own work (the
// source, the network, the snapshots) that the figures measure.
import { performance } from 'node:perf_hooks';

/** Waits shorter than this are not worth a sleep: they are summed into the next one. */
const MIN_WAIT_MS = 1;
/** A sink that fell behind (its input was empty) does not catch up by more than this. */
const MAX_CREDIT_MS = 50;

function number(params, name) {
  const value = Number(params[name]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`parameter "${name}" must be a positive number, not ${params[name]}`);
  return value;
}

/** A map that passes `perSecond` records a second at most, sleeping the task thread in between. */
function throttle(perSecond) {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const interval = 1000 / perSecond;
  let due = 0;
  return (record) => {
    const now = performance.now();
    due = Math.max(due, now - MAX_CREDIT_MS) + interval;
    if (due - now >= MIN_WAIT_MS) Atomics.wait(cell, 0, 0, due - now);
    return record;
  };
}

/** @param {{ rate: number, sinkRate: number }} params */
export default function slowSink(params) {
  const rate = number(params, 'rate');
  const sinkRate = number(params, 'sinkRate');
  return {
    name: 'slow-sink',
    stages: [
      { name: 'events', source: { kind: 'nexmark', nexmark: { rate } } },
      {
        name: 'slow',
        inputs: [{ from: 'events', partitioning: { type: 'rebalance' } }],
        operators: [{ kind: 'map', map: throttle(sinkRate) }],
        sink: { kind: 'discard' },
      },
    ],
  };
}

/** How many samples a task keeps at most. */
const KEPT = 1024;
/** Samples older than this leave the figures, ms: a task's percentiles are those of its recent past, not of its start. */
export const LATENCY_WINDOW_MS = 20_000;

/** p50 and p99 of the recent samples, ms, and how many were taken in all. */
export interface LatencyFigures {
  p50: number;
  p99: number;
  count: number;
}

/**
 * The latest latencies a sink task measured (a latency marker's trip from its source, a
 * watermark's from the timestamp assigner that made it), ms: a ring of the last KEPT,
 * each with when it was taken, of which the last LATENCY_WINDOW_MS count.
 */
export class LatencySamples {
  private readonly values = new Float64Array(KEPT);
  private readonly taken = new Float64Array(KEPT);
  count = 0;

  add(ms: number, now = Date.now()): void {
    const i = this.count % KEPT;
    this.values[i] = ms;
    this.taken[i] = now;
    this.count++;
  }

  /** The percentiles of the recent samples; undefined without any. */
  figures(now = Date.now()): LatencyFigures | undefined {
    const recent: number[] = [];
    for (let i = 0; i < Math.min(this.count, KEPT); i++) if (now - this.taken[i] <= LATENCY_WINDOW_MS) recent.push(this.values[i]);
    if (recent.length === 0) return undefined;
    recent.sort((a, b) => a - b);
    const at = (q: number): number => recent[Math.min(recent.length - 1, Math.floor(q * recent.length))];
    return { p50: at(0.5), p99: at(0.99), count: this.count };
  }
}

/** Repetition and statistics shared by the end-to-end benchmarks. */

/** The median of the values (the lower middle one for an even count, so it is a value that was measured). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of nothing');
  return [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
}

/** Nearest-rank percentile (0 < p <= 100) of values sorted ascending. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export interface Measured<T> {
  /** The run with the median `key`. */
  median: T;
  runs: T[];
}

export function measured<T>(runs: T[], key: (result: T) => number): Measured<T> {
  const middle = median(runs.map(key));
  return { median: runs.find((r) => key(r) === middle)!, runs };
}

/** Runs `measure` `times` times in turn; every run, and the median one by `key`. */
export async function repeatRuns<T>(times: number, measure: () => Promise<T>, key: (result: T) => number): Promise<Measured<T>> {
  const runs: T[] = [];
  for (let i = 0; i < times; i++) runs.push(await measure());
  return measured(runs, key);
}

/**
 * A baseline and the figure compared with it, run in turns (baseline, figure, baseline,
 * ...), so that a change in the load of a shared machine hits both alike.
 */
export async function alternateRuns<B, F>(
  times: number,
  baseline: { measure: () => Promise<B>; key: (result: B) => number },
  figure: { measure: () => Promise<F>; key: (result: F) => number },
): Promise<[Measured<B>, Measured<F>]> {
  const baselines: B[] = [];
  const figures: F[] = [];
  for (let i = 0; i < times; i++) {
    baselines.push(await baseline.measure());
    figures.push(await figure.measure());
  }
  return [measured(baselines, baseline.key), measured(figures, figure.key)];
}

/** 1234567 -> "1.23 M", 12345 -> "12.3 k". */
export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)} M`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)} k`;
  return value.toFixed(0);
}

export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`;
}

export const MiB = 1 << 20;

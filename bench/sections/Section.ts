/**
 * A bench section of its own: `npm run bench -- --only NAME [--quick]`, for figures too
 * slow for the default suite's 10 minutes (each section keeps within 10 on its own).
 * It prints its table on stdout and returns its figures, which land in
 * bench/results/<timestamp>.<name>.json.
 */
export interface BenchSection {
  /** What `--only` names it by. */
  readonly name: string;
  /** What it measures, for `--only` without a name. */
  readonly about: string;
  run(quick: boolean): Promise<unknown>;
}

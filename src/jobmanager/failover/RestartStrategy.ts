import { SpillwayError } from '../../errors/Errors.js';

/**
 * How often and after how long a failed job is tried again, as Flink's restart
 * strategies: `attempts` counts restarts after the first failure, so a task that
 * always fails runs attempts + 1 times.
 */
export type RestartStrategy =
  | { strategy: 'none' }
  | { strategy: 'fixed-delay'; attempts: number; delayMs: number }
  | { strategy: 'exponential-delay'; attempts: number; initialMs: number; maxMs: number; multiplier: number; jitter: number };

export type RestartStrategyName = RestartStrategy['strategy'];

const FIXED_DEFAULTS = { attempts: 3, delayMs: 1000 };

/** The JobManager's default unless told otherwise (--restart-strategy, --restart-attempts, --restart-delay). */
export const DEFAULT_RESTART: RestartStrategy = { strategy: 'fixed-delay', ...FIXED_DEFAULTS };

/** Flink's exponential-delay defaults for the fields a job leaves out. */
const EXPONENTIAL_DEFAULTS = { attempts: 10, initialMs: 1000, maxMs: 60_000, multiplier: 1.5, jitter: 0.1 };

/** The JSON schema of `restart` in POST /jobs. */
export const restartSchema = {
  type: 'object',
  required: ['strategy'],
  properties: {
    strategy: { type: 'string', enum: ['none', 'fixed-delay', 'exponential-delay'] },
    attempts: { type: 'integer', minimum: 0 },
    delayMs: { type: 'integer', minimum: 0 },
    initialMs: { type: 'integer', minimum: 0 },
    maxMs: { type: 'integer', minimum: 0 },
    multiplier: { type: 'number', minimum: 1 },
    jitter: { type: 'number', minimum: 0, maximum: 1 },
  },
  additionalProperties: false,
} as const;

const FIELDS: Record<RestartStrategyName, readonly string[]> = {
  none: [],
  'fixed-delay': ['attempts', 'delayMs'],
  'exponential-delay': ['attempts', 'initialMs', 'maxMs', 'multiplier', 'jitter'],
};

/**
 * A strategy as a job gave it (its types checked by `restartSchema`), its missing
 * fields taken from the JobManager's default when that is of the same kind, else
 * from Flink's defaults. Throws on a field the strategy does not have.
 */
export function restartStrategy(given: { strategy: RestartStrategyName } & Record<string, unknown>, defaults: RestartStrategy): RestartStrategy {
  const extra = Object.keys(given).filter((k) => k !== 'strategy' && !FIELDS[given.strategy].includes(k));
  if (extra.length > 0) throw new SpillwayError('SPW_ERR_BAD_REQUEST', `restart strategy ${given.strategy} has no ${extra.join(', ')}; it takes ${FIELDS[given.strategy].join(', ') || 'nothing more'}`);
  const base = given.strategy === defaults.strategy ? defaults : defaultStrategy(given.strategy);
  const merged = { ...base, ...given } as RestartStrategy;
  if (merged.strategy === 'exponential-delay' && merged.maxMs < merged.initialMs) {
    throw new SpillwayError('SPW_ERR_BAD_REQUEST', `restart maxMs ${merged.maxMs} is below initialMs ${merged.initialMs}`);
  }
  return merged;
}

/** The strategy of --restart-strategy NAME with --restart-attempts and --restart-delay. */
export function defaultStrategy(name: RestartStrategyName, attempts?: number, delayMs?: number): RestartStrategy {
  if (name === 'none') return { strategy: 'none' };
  if (name === 'fixed-delay') return { strategy: 'fixed-delay', attempts: attempts ?? FIXED_DEFAULTS.attempts, delayMs: delayMs ?? FIXED_DEFAULTS.delayMs };
  if (name === 'exponential-delay') {
    return { strategy: 'exponential-delay', ...EXPONENTIAL_DEFAULTS, attempts: attempts ?? EXPONENTIAL_DEFAULTS.attempts, initialMs: delayMs ?? EXPONENTIAL_DEFAULTS.initialMs };
  }
  throw new SpillwayError('SPW_ERR_CONFIG', `--restart-strategy must be none, fixed-delay or exponential-delay, not "${String(name)}"`);
}

/**
 * The wait before restart number `restart` (1 for the first), or null when the
 * strategy allows no more.
 */
export function restartDelay(strategy: RestartStrategy, restart: number, random: () => number = Math.random): number | null {
  if (strategy.strategy === 'none' || restart > strategy.attempts) return null;
  if (strategy.strategy === 'fixed-delay') return strategy.delayMs;
  const delay = Math.min(strategy.maxMs, strategy.initialMs * strategy.multiplier ** (restart - 1));
  return Math.round(delay * (1 + strategy.jitter * (2 * random() - 1)));
}

/** A strategy in words, for errors: "restart strategy fixed-delay with 3 attempts". */
export function describeStrategy(strategy: RestartStrategy): string {
  return strategy.strategy === 'none' ? 'restart strategy none' : `restart strategy ${strategy.strategy} with ${strategy.attempts} attempts`;
}

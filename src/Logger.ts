import { LogController, type FastifyBaseLogger } from 'fastify';
import { pino, type Level, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { SpillwayError } from './errors/Errors.js';

/** The levels `--log-level` takes, most to least severe; `silent` logs nothing. */
export const LOG_LEVELS: readonly (Level | 'silent')[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export const DEFAULT_LOG_LEVEL = 'info';

/**
 * The process's logger (pino, fastify's own): JSON lines on stderr, one object per
 * event with the ids it concerns (`job`, `task`, `partition`, `peer`, ...); readable
 * lines instead when stderr is a terminal. Components take a child with their name.
 */
export const log: Logger = pino(
  { level: process.env.SPILLWAY_LOG_LEVEL ?? DEFAULT_LOG_LEVEL, base: { pid: process.pid } },
  process.stderr.isTTY ? pretty({ destination: 2, sync: true, colorize: true }) : pino.destination({ fd: 2, sync: true }),
);

/** Sets the level of every logger of this process, from `--log-level`; a bad name is an error that lists the good ones. */
export function setLogLevel(level: string): void {
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new SpillwayError('SPW_ERR_USAGE', `--log-level must be one of ${LOG_LEVELS.join(', ')}, not "${level}"`);
  log.level = level;
}

/** A server's authentication policy as it starts: a warning when it begins with WARNING (--insecure). */
export function logPolicy(policy: string): void {
  if (policy.startsWith('WARNING')) log.warn(policy);
  else log.info(policy);
}

/** Fastify's options for a server that logs through this logger: its errors, not every request. */
export function httpLogging(component: string): { loggerInstance: FastifyBaseLogger; logController: LogController } {
  return { loggerInstance: log.child({ component }) as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) };
}

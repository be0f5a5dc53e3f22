import { SpillwayError } from '../errors/Errors.js';

/** Checked access to a built-in job's params, which arrive as JSON values or, from the command line, as strings. */

export function requireString(params: Record<string, unknown>, name: string): string {
  const value = params[name];
  if (typeof value !== 'string' || value === '') throw new SpillwayError('SPW_ERR_INVALID_PARAM', `parameter "${name}" must be a non-empty string`);
  return value;
}

export function numberParam(params: Record<string, unknown>, name: string, fallback: number, min = 0): number {
  const raw = params[name] ?? fallback;
  const value = typeof raw === 'string' ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new SpillwayError('SPW_ERR_INVALID_PARAM', `parameter "${name}" must be a number >= ${min}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

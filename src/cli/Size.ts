import { SpillwayError } from '../errors/Errors.js';

const UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, k: 1024, mb: 1024 ** 2, m: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3 };

/** Parses a size such as `32kb`, `64mb`, `1gb` or a number of bytes. */
export function parseSize(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = match ? UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) throw new SpillwayError('SPW_ERR_USAGE', `"${text}" is not a size (examples: 32kb, 64mb, 1gb)`);
  return Math.floor(Number(match[1]) * unit);
}

/** A number of bytes as parseSize reads it back: in the largest unit that divides it (`256mb`, `6kb`, `100`). */
export function formatSize(bytes: number): string {
  for (const unit of ['gb', 'mb', 'kb'] as const) if (bytes > 0 && bytes % UNITS[unit] === 0) return `${bytes / UNITS[unit]}${unit}`;
  return String(bytes);
}

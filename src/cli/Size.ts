const UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, k: 1024, mb: 1024 ** 2, m: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3 };

/** Parses a size such as `32kb`, `64mb`, `1gb` or a number of bytes. */
export function parseSize(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = match ? UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) throw new Error(`"${text}" is not a size (examples: 32kb, 64mb, 1gb)`);
  return Math.floor(Number(match[1]) * unit);
}

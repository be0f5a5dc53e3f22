/**
 * The compressions of files a source reads (told by the file's extension) and a sink
 * writes (asked for by name): gzip (`.gz`) and zstd (`.zst`). Only names here: what
 * compresses is Compressor.ts, what decompresses Decompressor.ts.
 */
export type Compression = 'gzip' | 'zstd';

const EXTENSIONS: { readonly [C in Compression]: string } = { gzip: '.gz', zstd: '.zst' };

export const COMPRESSIONS = Object.keys(EXTENSIONS) as Compression[];

/** The extension a compressed output file gets (`part-00000.gz`); '' for none. */
export function extensionOf(compression: Compression | undefined): string {
  return compression === undefined ? '' : EXTENSIONS[compression];
}

/** The compression a file is read with, by its extension; undefined for a plain file. */
export function compressionOfFile(file: string): Compression | undefined {
  if (file.endsWith('.gz')) return 'gzip';
  if (file.endsWith('.zst')) return 'zstd';
  return undefined;
}

/** Validates a `compression` field: the end of a sentence saying what is wrong, or undefined. */
export function compressionProblem(value: unknown): string | undefined {
  if (value === undefined || (typeof value === 'string' && Object.hasOwn(EXTENSIONS, value))) return undefined;
  return `compression must be one of ${COMPRESSIONS.map((c) => `'${c}'`).join(', ')}, not ${JSON.stringify(value)}`;
}

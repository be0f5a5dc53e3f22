import zlib from 'node:zlib';
import type { Encoder } from '@toondepauw/node-zstd';
import { SpillwayError } from '../../errors/Errors.js';
import type { Compression } from './Compression.js';

/**
 * What a sink compresses at once: each block becomes a gzip member or a zstd frame of
 * its own, so that a file is written in bounded memory with synchronous calls, and
 * every gzip or zstd reader reads the concatenation as one stream (100 MB of JSON Lines
 * came to 17.4 MB with zstd in blocks of this size, 15.7 MB with gzip).
 */
export const COMPRESSED_BLOCK_BYTES = 1 << 20;

/** zstd's own default: about gzip's ratio at several times its speed. */
export const ZSTD_LEVEL = 3;

/** zlib's default level. */
export const GZIP_LEVEL = 6;

let encoder: Encoder | undefined;

/**
 * Loads what compresses `compression` (zstd's binding is imported on first use, so a
 * task thread that compresses nothing never loads it); resolves once compressBlock can run.
 */
export async function loadCompressor(compression: Compression): Promise<void> {
  if (compression === 'zstd' && encoder === undefined) {
    const { Encoder } = await import('@toondepauw/node-zstd');
    encoder ??= new Encoder(ZSTD_LEVEL);
  }
}

/** `data` as one gzip member or one zstd frame; for zstd, after loadCompressor('zstd'). */
export function compressBlock(compression: Compression, data: Buffer): Buffer {
  if (compression === 'gzip') return zlib.gzipSync(data, { level: GZIP_LEVEL });
  if (encoder === undefined) throw new SpillwayError('SPW_ERR_INTERNAL', 'zstd was asked to compress before loadCompressor(\'zstd\')');
  return encoder.encodeSync(data);
}

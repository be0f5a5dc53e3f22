import { SpillwayError } from '../../errors/Errors.js';
/**
 * The codecs a compressed buffer may use (see BufferCodec.ts), by name, as jobs name
 * them. Kept apart from the codecs themselves, which need Node, so that the job API's
 * types name them without Node's types.
 */
export const COMPRESSION_CODECS = ['snappy', 'brotli'] as const;
export type CompressionCodec = (typeof COMPRESSION_CODECS)[number];
/** What `compression: true` means. */
export const DEFAULT_CODEC: CompressionCodec = 'snappy';

/** The codec of a `compression` setting (`true` for the default), or null for none; anything else is an error. */
export function compressionCodec(setting: unknown): CompressionCodec | null {
  if (setting === undefined || setting === false || setting === null) return null;
  if (setting === true) return DEFAULT_CODEC;
  if (typeof setting === 'string' && (COMPRESSION_CODECS as readonly string[]).includes(setting)) return setting as CompressionCodec;
  throw new SpillwayError('SPW_ERR_COMPRESSION', `compression must be true, false or a codec (${COMPRESSION_CODECS.join(', ')}), not ${JSON.stringify(setting)}`);
}

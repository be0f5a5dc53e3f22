import fs from 'node:fs';
import zlib from 'node:zlib';
import type { ParquetWriter, schemaFromColumnData } from 'hyparquet-writer';
import { SpillwayError } from '../../errors/Errors.js';
import { compressBlock, loadCompressor } from '../compression/Compressor.js';
import { abortPartFiles, commitPartFiles, openPartSink, type PartFile } from '../PartFiles.js';
import type { SinkSpec } from '../SinkSpec.js';
import { PARQUET_COMPRESSIONS, schemaProblem, type ParquetCompression, type ParquetSchema, type ParquetType } from './ParquetSchema.js';

/** One Parquet file per subtask, part-00000.parquet, of the columns `schema` names, in row groups of `rowGroupRows` rows (100,000). */
export type ParquetSinkDefinition = { kind: 'parquet'; path: string; schema: ParquetSchema; compression?: ParquetCompression; rowGroupRows?: number };

type ParquetSink = ParquetSinkDefinition;
type Writer = ConstructorParameters<typeof ParquetWriter>[0];
type BasicType = NonNullable<Parameters<typeof schemaFromColumnData>[0]['columnData'][number]['type']>;

const WHAT = 'the Parquet sink';

/**
 * Rows a writer holds before it writes them as a row group: the unit a reader's split
 * is, so it must be neither too large for a task's memory nor too small to amortize
 * the group's metadata and page headers (hyparquet-writer's own default).
 */
export const DEFAULT_ROW_GROUP_ROWS = 100_000;

const CODECS: { readonly [C in ParquetCompression]: Writer['codec'] } = { snappy: 'SNAPPY', gzip: 'GZIP', zstd: 'ZSTD', none: 'UNCOMPRESSED' };

const COMPRESSORS: Writer['compressors'] = {
  GZIP: (input) => zlib.gzipSync(input),
  ZSTD: (input) => compressBlock('zstd', Buffer.from(input.buffer, input.byteOffset, input.length)),
};

/** hyparquet-writer's type of a schema type, and how a record's value is given to it. */
function columnOf(type: ParquetType): { type: BasicType; value: (v: unknown) => unknown } {
  const same = (v: unknown): unknown => v ?? null;
  switch (type) {
    case 'UTF8':
    case 'STRING':
      return { type: 'STRING', value: same };
    case 'INT64':
      return { type: 'INT64', value: (v) => (typeof v === 'number' ? BigInt(v) : (v ?? null)) };
    default:
      return { type, value: same };
  }
}

/**
 * Opens one Parquet part file: rows are held until a row group's worth, then written
 * as a row group (hyparquet-writer: dictionary and RLE encodings, statistics, the
 * schema's compression, snappy by default); the footer is written when it closes.
 */
async function openParquetFile(sink: ParquetSink, file: string): Promise<PartFile> {
  // Imported when a Parquet sink first opens: a task thread that writes none never loads them.
  const { ParquetWriter, fileWriter, schemaFromColumnData } = await import('hyparquet-writer');
  const names = Object.keys(sink.schema);
  const columns = names.map((name) => columnOf(sink.schema[name]));
  const ioError = (error: unknown, doing: string): SpillwayError =>
    new SpillwayError('SPW_ERR_SINK_IO', `${WHAT} cannot ${doing} ${file}: ${(error as Error).message}`, { cause: error });
  let writer: ParquetWriter;
  try {
    const schema = schemaFromColumnData({ columnData: names.map((name, i) => ({ name, data: [], type: columns[i].type, nullable: true })) });
    writer = new ParquetWriter({ writer: fileWriter(file), schema, codec: CODECS[sink.compression ?? 'snappy'], compressors: COMPRESSORS });
  } catch (error) {
    throw ioError(error, 'open');
  }
  const groupRows = sink.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS;
  let rows: Record<string, unknown>[] = [];
  const writeGroup = (): void => {
    if (rows.length === 0) return;
    const group = rows;
    rows = [];
    const columnData = names.map((name, i) => ({ name, type: columns[i].type, data: group.map((row) => columns[i].value(row?.[name])) }));
    try {
      writer.write({ columnData, rowGroupSize: group.length });
    } catch (error) {
      throw new SpillwayError('SPW_ERR_SINK_IO', `${WHAT} cannot write a row group of ${file} (do the records fit the schema ${JSON.stringify(sink.schema)}?): ${(error as Error).message}`, { cause: error });
    }
  };
  let empty = true;
  return {
    get empty() {
      return empty;
    },
    push(record) {
      empty = false;
      rows.push(record as Record<string, unknown>);
      if (rows.length >= groupRows) writeGroup();
    },
    async close() {
      writeGroup();
      try {
        writer.finish();
      } catch (error) {
        throw ioError(error, 'finish');
      }
    },
    abort() {
      // fileWriter writes synchronously: nothing is left open.
      rows = [];
      fs.rmSync(file, { force: true });
    },
  };
}

/** `{ kind: 'parquet', path: folder, schema, compression? }`: a Parquet file per subtask, `part-NNNNN.parquet` (with checkpoints, one per checkpoint too), committed as the text sink's are. */
export const PARQUET_SINK: SinkSpec<ParquetSink> = {
  kind: 'parquet',
  validate(sink) {
    if (typeof sink.path !== 'string' || sink.path === '') return 'needs a folder, path';
    const problem = schemaProblem(sink.schema);
    if (problem !== undefined) return problem;
    if (sink.rowGroupRows !== undefined && !(Number.isInteger(sink.rowGroupRows) && sink.rowGroupRows > 0)) {
      return `rowGroupRows must be a positive integer, not ${JSON.stringify(sink.rowGroupRows)}`;
    }
    if (sink.compression !== undefined && !PARQUET_COMPRESSIONS.includes(sink.compression)) {
      return `compression must be one of ${PARQUET_COMPRESSIONS.join(', ')}, not ${JSON.stringify(sink.compression)}`;
    }
    return undefined;
  },
  async open(sink, context) {
    if (sink.compression === 'zstd') await loadCompressor('zstd');
    return openPartSink(WHAT, sink.path, context, '.parquet', (file) => openParquetFile(sink, file));
  },
  commit: (sink, jobId, attempts) => commitPartFiles(WHAT, sink.path, jobId, attempts, '.parquet'),
  abort: (sink, jobId) => abortPartFiles(sink.path, jobId),
};


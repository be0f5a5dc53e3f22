import type { FileMetaData } from 'hyparquet';
import { MalformedInputError } from '../MalformedInput.js';
import { forEachSplit, type SourceSpec } from '../SourceSpec.js';
import { listInputFiles } from '../text/TextSplits.js';
import { loadHyparquet, ParquetFile } from './ParquetFiles.js';
import { RowGroupSupply, type RowGroupSplit } from './RowGroupSupply.js';

/** Parquet: each row an object of its columns (`columns`: only these), the files' row groups handed out as splits. */
export type ParquetSourceDefinition = { kind: 'parquet'; path: string; columns?: string[] };

type ParquetSource = ParquetSourceDefinition;

/** Records between two turns of the task thread's event loop. */
const RECORDS_PER_TURN = 4096;

/**
 * `{ kind: 'parquet', path, columns? }`: the rows of a Parquet file, a folder of them or
 * a glob, each an object of its columns (only `columns`, if given: the others are not
 * read), read with hyparquet (snappy, gzip, zstd, brotli and lz4 pages). The row groups
 * are the splits; a task reads a row group's columns whole, then gives its rows one
 * by one. A row group that does not decode fails the job with SPW_ERR_MALFORMED_INPUT
 * naming the file and the row group.
 */
export const PARQUET_SOURCE: SourceSpec<ParquetSource> = {
  kind: 'parquet',
  validate(source) {
    if (typeof source.path !== 'string' || source.path === '') return 'needs a path';
    if (source.columns !== undefined && !(Array.isArray(source.columns) && source.columns.length > 0 && source.columns.every((c) => typeof c === 'string'))) {
      return `columns must be a list of column names, not ${JSON.stringify(source.columns)}`;
    }
    return undefined;
  },
  bounded: () => true,
  check: (source) => void listInputFiles(source.path),
  splits: (source, parallelism) => new RowGroupSupply(source.path, parallelism, source.columns),
  resume: (split, position) => resumeRows(split as RowGroupSplit, position),
  async read(source, context) {
    // Imported when a Parquet source first reads: a task thread that reads none never loads the codecs.
    const { compressors } = await import('hyparquet-compressors');
    const { parquetReadObjects } = await loadHyparquet();
    const open = new Map<string, { parquet: ParquetFile; metadata: FileMetaData }>();
    let count = 0;
    try {
      const read = async (split: RowGroupSplit, at: (position: unknown) => void | Promise<void>): Promise<void> => {
        let file = open.get(split.file);
        if (file === undefined) {
          const parquet = ParquetFile.open(split.file);
          try {
            file = { parquet, metadata: parquet.metadata() };
          } catch (error) {
            parquet.close();
            throw error;
          }
          open.set(split.file, file);
        }
        let rows: Record<string, unknown>[];
        try {
          rows = await parquetReadObjects({
            file: file.parquet.buffer,
            metadata: file.metadata,
            columns: source.columns,
            rowStart: split.rowStart,
            rowEnd: split.rowEnd,
            compressors,
          });
        } catch (error) {
          throw new MalformedInputError(split.file, { rowGroup: split.rowGroup }, `does not decode: ${(error as Error).message}`);
        }
        for (let i = 0; i < rows.length; i++) {
          // A reader could resume at any row: every few thousand, it says where.
          if (i % RECORDS_PER_TURN === 0) await at(split.rowStart + i);
          const waiting = context.push(rows[i]);
          if (waiting) await waiting;
          if (++count % RECORDS_PER_TURN === 0) await context.pause();
        }
      };
      await forEachSplit(context, read, resumeRows);
    } finally {
      for (const { parquet } of open.values()) parquet.close();
    }
  },
};

/** What is left of a row group from a row its reader could resume at (a checkpoint's position): that row on. */
function resumeRows(split: RowGroupSplit, position: unknown): RowGroupSplit {
  return { ...split, rowStart: position as number };
}

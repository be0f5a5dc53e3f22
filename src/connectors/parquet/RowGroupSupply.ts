import { InvalidJobError } from '../../job/InvalidJobError.js';
import type { SplitSupply } from '../SplitAssigner.js';
import { listInputFiles } from '../text/TextSplits.js';
import { columnNames, ParquetFile } from './ParquetFiles.js';

/** One row group of one file: rows [rowStart, rowEnd) of it. */
export interface RowGroupSplit {
  file: string;
  rowGroup: number;
  rowStart: number;
  rowEnd: number;
}

/**
 * A Parquet input's row groups, as the SplitAssigner hands them out: each answer a
 * 1/2p share of the bytes left (at least one row group), so shares shrink as the input
 * runs out, as the text splits' do. Every file's footer is read at the first ask (a
 * truncated file fails the job there, SPW_ERR_MALFORMED_INPUT), and projected columns
 * a file lacks are refused (SPW_ERR_INVALID_JOB).
 */
export class RowGroupSupply implements SplitSupply<RowGroupSplit> {
  private readonly groups: (RowGroupSplit & { bytes: number })[] = [];
  private next = 0;
  private remaining = 0;

  constructor(
    input: string,
    private readonly parallelism: number,
    columns?: readonly string[],
  ) {
    for (const file of listInputFiles(input)) {
      const parquet = ParquetFile.open(file);
      try {
        const metadata = parquet.metadata();
        const names = columnNames(metadata);
        const missing = columns?.find((column) => !names.includes(column));
        if (missing !== undefined) throw new InvalidJobError(`the Parquet file ${file} has no column ${JSON.stringify(missing)}; its columns are ${names.join(', ')}`);
        let rowStart = 0;
        metadata.row_groups.forEach((group, rowGroup) => {
          const rows = Number(group.num_rows);
          const bytes = group.columns.reduce((sum, column) => sum + Number(column.meta_data?.total_compressed_size ?? 0n), 0);
          if (rows > 0) this.groups.push({ file, rowGroup, rowStart, rowEnd: rowStart + rows, bytes });
          this.remaining += bytes;
          rowStart += rows;
        });
      } finally {
        parquet.close();
      }
    }
  }

  take(): RowGroupSplit[] {
    const share = this.parallelism === 1 ? this.remaining : Math.ceil(this.remaining / (2 * this.parallelism));
    const splits: RowGroupSplit[] = [];
    let taken = 0;
    while (this.next < this.groups.length && (splits.length === 0 || taken < share)) {
      const { bytes, ...split } = this.groups[this.next++];
      splits.push(split);
      taken += bytes;
      this.remaining -= bytes;
    }
    return splits;
  }
}

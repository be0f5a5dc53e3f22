import fs from 'node:fs';
import path from 'node:path';
import { extensionOf } from './compression/Compression.js';
import { abortPartFiles, commitPartFiles } from './PartFiles.js';
import { CSV_SINK, type CsvSinkDefinition } from './csv/CsvSink.js';
import { JSON_LINES_SINK, type JsonLinesSinkDefinition } from './jsonLines/JsonLinesSink.js';
import { PARQUET_SINK, type ParquetSinkDefinition } from './parquet/ParquetSink.js';
import type { SinkContext, SinkSpec, SinkWriter } from './SinkSpec.js';

/** A folder per value of the `partitionBy` fields (Hive's `col=value/`), each written by the file sink `format` (its path aside); the fields are in the path, not the files. */
export type PartitionedSinkDefinition = { kind: 'partitioned'; path: string; partitionBy: string[]; format: PartitionedFormat };

type FileSink = JsonLinesSinkDefinition | CsvSinkDefinition | ParquetSinkDefinition;

/** The file sinks a partitioned sink writes each partition's folder with. */
export type PartitionedFormat = DistributiveOmit<FileSink, 'path'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const WHAT = 'the partitioned file sink';

/** The folder name of a partition value, as Hive's (and Flink's filesystem connector): `col=value`, with `/`, `=`, `%` and control characters escaped. */
export function partitionFolder(column: string, value: unknown): string {
  const text = value === null || value === undefined || value === '' ? DEFAULT_PARTITION : String(value);
  let escaped = '';
  for (const c of text) escaped += c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f || ESCAPED.includes(c) ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : c;
  return `${column}=${escaped}`;
}

/** The printable characters Hive escapes in a partition folder's name. */
const ESCAPED = '"#%\'*/:=?\\{[]^';

/** Where a null (or empty) partition value goes: Flink's `partition.default-name`. */
export const DEFAULT_PARTITION = '__DEFAULT_PARTITION__';

/** The file sink of one partition's folder. */
function sinkAt(sink: PartitionedSinkDefinition, folder: string): FileSink {
  return { ...sink.format, path: folder } as FileSink;
}

const FORMATS = { jsonLines: JSON_LINES_SINK, csv: CSV_SINK, parquet: PARQUET_SINK };

/** The spec of the format's kind. */
function formatSpec(sink: PartitionedSinkDefinition): SinkSpec<FileSink> {
  return FORMATS[sink.format.kind] as SinkSpec<FileSink>;
}

/**
 * One subtask's writer: a writer of the format per partition folder it meets, opened as its
 * first record comes; each checkpoint's transaction is every open writer's, by folder.
 */
class PartitionedWriter {
  private readonly writers = new Map<string, SinkWriter>();

  constructor(
    private readonly sink: PartitionedSinkDefinition,
    private readonly context: SinkContext,
    private readonly spec: SinkSpec<FileSink>,
  ) {}

  writer(): SinkWriter {
    const writer: SinkWriter = {
      push: (record) => this.push(record as Record<string, unknown>),
      end: async () => {
        for (const w of this.writers.values()) await w.end();
      },
      abort: () => {
        for (const w of this.writers.values()) w.abort();
      },
    };
    if (!this.context.checkpointed) return writer;
    return {
      ...writer,
      prepareCommit: async (id) => {
        const transactions: [string, unknown][] = [];
        for (const [folder, w] of this.writers) transactions.push([folder, await w.prepareCommit?.(id)]);
        return transactions;
      },
      commit: async (id, transaction) => {
        for (const [folder, t] of transaction as [string, unknown][]) await (await this.writerOf(folder)).commit?.(id, t);
      },
    };
  }

  private push(record: Record<string, unknown>): void | Promise<void> {
    const rest = { ...record };
    const folders = this.sink.partitionBy.map((column) => {
      delete rest[column];
      return partitionFolder(column, record[column]);
    });
    const folder = folders.join('/');
    const open = this.writers.get(folder);
    if (open !== undefined) return open.push(rest);
    return this.writerOf(folder).then((w) => w.push(rest));
  }

  private async writerOf(folder: string): Promise<SinkWriter> {
    let w = this.writers.get(folder);
    if (w === undefined) {
      w = await this.spec.open(sinkAt(this.sink, path.join(this.sink.path, folder)), this.context);
      this.writers.set(folder, w);
    }
    return w;
  }
}

/** The partition folders under a sink's path: `partitionBy.length` levels of `col=value`. */
function partitionFolders(sink: PartitionedSinkDefinition): string[] {
  let folders = [sink.path];
  for (const column of sink.partitionBy) {
    folders = folders.flatMap((dir) => {
      try {
        return fs.readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory() && d.name.startsWith(`${column}=`)).map((d) => path.join(dir, d.name));
      } catch {
        return [];
      }
    });
  }
  return folders;
}

function extension(sink: PartitionedSinkDefinition): string {
  if (sink.format.kind === 'parquet') return '.parquet';
  return sink.format.kind === 'jsonLines' ? extensionOf(sink.format.compression) : '';
}

/** `{ kind: 'partitioned', path, partitionBy, format }`: the format's part files in a folder per partition, committed as theirs are. */
export const PARTITIONED_SINK: SinkSpec<PartitionedSinkDefinition> = {
  kind: 'partitioned',
  validate(sink) {
    if (typeof sink.path !== 'string' || sink.path === '') return 'needs a folder, path';
    if (!Array.isArray(sink.partitionBy) || sink.partitionBy.length === 0 || !sink.partitionBy.every((c) => typeof c === 'string' && c !== '')) return 'needs the fields to partition by, partitionBy';
    if (sink.format === null || typeof sink.format !== 'object' || !['jsonLines', 'csv', 'parquet'].includes((sink.format as { kind: string }).kind)) return "needs a format: a jsonLines, csv or parquet sink's options";
    return formatSpec(sink).validate(sinkAt(sink, sink.path));
  },
  open: async (sink, context) => new PartitionedWriter(sink, context, formatSpec(sink)).writer(),
  commit(sink, jobId, attempts) {
    for (const folder of partitionFolders(sink)) commitPartFiles(WHAT, folder, jobId, attempts, extension(sink), true);
  },
  abort(sink, jobId) {
    for (const folder of partitionFolders(sink)) abortPartFiles(folder, jobId);
  },
};

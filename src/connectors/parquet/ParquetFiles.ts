import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { AsyncBuffer, FileMetaData } from 'hyparquet';
import { SpillwayError } from '../../errors/Errors.js';
import { MalformedInputError } from '../MalformedInput.js';

type Hyparquet = typeof import('hyparquet');
let hyparquet: Hyparquet | undefined;

/**
 * hyparquet, imported on first use rather than with this module, which every task
 * thread and every module sandbox loads with the source registry (a fresh sandbox
 * thread paid about 60 ms for it). A task's reader awaits it; the JobManager's split
 * supply, which reads footers synchronously, requires it (Node 20.19 requires ES modules).
 */
export async function loadHyparquet(): Promise<Hyparquet> {
  return (hyparquet ??= await import('hyparquet'));
}

function hyparquetNow(): Hyparquet {
  return (hyparquet ??= createRequire(import.meta.url)('hyparquet') as Hyparquet);
}

/** A Parquet file ends in its footer: the metadata, its length (4 bytes) and `PAR1`. */
const FOOTER_TAIL = 8;
const MAGIC = 'PAR1';

/** An open Parquet file as hyparquet reads it: synchronous reads of byte ranges (a task thread has nothing else to do while it waits). */
export class ParquetFile {
  readonly buffer: AsyncBuffer;
  private constructor(
    readonly file: string,
    private readonly fd: number,
    readonly size: number,
  ) {
    this.buffer = { byteLength: size, slice: (start, end) => this.read(start, end ?? size) };
  }

  static open(file: string): ParquetFile {
    try {
      const fd = fs.openSync(file, 'r');
      return new ParquetFile(file, fd, fs.fstatSync(fd).size);
    } catch (error) {
      throw new SpillwayError('SPW_ERR_SOURCE_IO', `cannot read ${file}: ${(error as Error).message}`, { cause: error });
    }
  }

  close(): void {
    fs.closeSync(this.fd);
  }

  /**
   * The file's metadata, from its footer. A file cut short (no `PAR1` at its end, or a
   * footer longer than the file) or a footer that does not decode fails with
   * SPW_ERR_MALFORMED_INPUT naming the file and the byte offset where the footer should be.
   */
  metadata(): FileMetaData {
    const size = this.size;
    if (size < FOOTER_TAIL + MAGIC.length) throw new MalformedInputError(this.file, { byteOffset: size }, `truncated: ${size} bytes are too few for a Parquet file`);
    const tail = Buffer.from(this.read(size - FOOTER_TAIL, size));
    if (tail.toString('latin1', 4) !== MAGIC) throw new MalformedInputError(this.file, { byteOffset: size }, `truncated or not Parquet: no ${MAGIC} footer at its end (byte ${size})`);
    const length = tail.readUInt32LE(0);
    const start = size - FOOTER_TAIL - length;
    if (start < MAGIC.length) throw new MalformedInputError(this.file, { byteOffset: size - FOOTER_TAIL }, `truncated: its footer says ${length} bytes of metadata, more than the file holds`);
    try {
      return hyparquetNow().parquetMetadata(this.read(start, size));
    } catch (error) {
      throw new MalformedInputError(this.file, { byteOffset: start }, `its metadata does not decode: ${(error as Error).message}`);
    }
  }

  private read(start: number, end: number): ArrayBuffer {
    const bytes = new Uint8Array(Math.max(0, end - start));
    let done = 0;
    while (done < bytes.length) {
      const read = fs.readSync(this.fd, bytes, done, bytes.length - done, start + done);
      if (read === 0) break;
      done += read;
    }
    return bytes.buffer;
  }
}

/** The top-level column names of a file's schema. */
export function columnNames(metadata: FileMetaData): string[] {
  const [root, ...elements] = metadata.schema;
  const names: string[] = [];
  // Depth-first: a group's children follow it; only the root's own children are columns.
  let index = 0;
  const skip = (): void => {
    const element = elements[index++];
    for (let i = 0; i < (element.num_children ?? 0); i++) skip();
  };
  for (let i = 0; i < (root.num_children ?? 0); i++) {
    names.push(elements[index].name);
    skip();
  }
  return names;
}

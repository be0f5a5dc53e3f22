import { FieldType, MAX_FIELDS, ShapeLayout, detectShape, shapeSignature, type RecordShape } from './RecordShape.js';
import { SpillwayError } from '../../../errors/Errors.js';

// A shaped batch: records of one shape (RecordShape.ts) in a layout of our own, the
// shape written once, then a fixed-width row a record, then the rows' strings.
//
// +-------------+-----------+---------------------------------------+----------------+-----------+
// | COUNT (4)   | FLAGS (1) | SHAPE                                 | ROWS           | STRINGS   |
// | u32 LE      | bit 0:    | layout (1), fields n (1), types (n),  | COUNT rows of  | UTF-8, in |
// | records     | strings   | objects: n keys, each u16 LE bytes +  | the fields in  | row order |
// |             | are ASCII | UTF-8                                 | order          |           |
// |             | bit 1:    |                                       |                |           |
// |             | timed     |                                       |                |           |
// +-------------+-----------+---------------------------------------+----------------+-----------+
//
// A row's field: STRING u32 LE byte length, INT32 i32 LE, FLOAT64 f64 LE, BOOLEAN u8,
// NULL nothing. The batch's length word in front (RecordSerializer) has bit 31 set.
// A timed batch is an edge of event time's, where each record follows its timestamp in
// the stream: each row starts with the timestamp, f64 LE, and the batch reads back as
// timestamp, record, timestamp, record.
//
// Strings are why it is cheaper than msgpackr: the writer concatenates them and
// encodes them with one call a batch; the reader decodes an ASCII batch's strings a
// chunk at a time and slices each out of its chunk, where a native call a string costs
// 50-60 ns. A string sliced out of a chunk keeps the chunk alive (at most CHUNK bytes),
// as msgpackr's native string extraction does.

/** Bytes in front of the shape: the count and the flags. */
const PREFIX_BYTES = 5;
const ASCII = 1;
const TIMED = 2;
/** The timestamp in front of a timed batch's row. */
const TIMESTAMP_BYTES = 8;
/** A batch with more string units than this goes to msgpackr: its strings are one string while it is written. */
const MAX_STRING_UNITS = 1 << 26;
/** A batch of more records than this goes to msgpackr; a reader refuses a count over it. */
const MAX_RECORDS = 1 << 24;
/** The reader decodes an ASCII batch's strings this many bytes at a time. */
const CHUNK = 4096;
/** A string of at least this many bytes is decoded on its own: a chunk would hold few. */
const OWN_STRING = 256;
/** Compiled writers and readers kept per thread; past it they are compiled again as seen. */
const MAX_CACHED_SHAPES = 256;
const INITIAL_SCRATCH = 64 * 1024;
/** A scratch grown past this for a large batch is given up after it. */
const LARGE_SCRATCH = 1024 * 1024;

const FIELD_BYTES: Record<FieldType, number> = {
  [FieldType.STRING]: 4,
  [FieldType.INT32]: 4,
  [FieldType.FLOAT64]: 8,
  [FieldType.BOOLEAN]: 1,
  [FieldType.NULL]: 0,
};

/** Buffer's own string methods: toString() and write() check their arguments and then call these. */
interface NativeStrings {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
  utf8Write(string: string, offset: number, length?: number): number;
}

type Bytes = Buffer & NativeStrings;

/** Fills the rows of a batch; the records' strings concatenated, or null at the first record that does not fit the shape. */
type FillRows = (records: readonly unknown[], count: number, view: DataView, position: number) => string | null;
/** Builds the records of a batch from its rows and strings. */
type ReadRows = (view: DataView, position: number, count: number, strings: StringRegion) => unknown[];

interface ShapeWriter {
  readonly shape: RecordShape;
  /** Each record follows its timestamp: the batch holds records.length / 2 rows. */
  readonly timed: boolean;
  /** The SHAPE part of the header. */
  readonly descriptor: Buffer;
  readonly rowBytes: number;
  /** Where each string field sits in a row, and which field it is. */
  readonly strings: readonly { offset: number; field: number }[];
  readonly fill: FillRows;
}

/**
 * Where every writer of a thread writes its batch, as msgpackr's Packr has one buffer
 * for all: a batch staged here is overwritten by the next, and must be copied out or
 * detached first (RecordSerializer.detach).
 */
let scratch = Buffer.allocUnsafeSlow(INITIAL_SCRATCH) as Bytes;
let scratchView = new DataView(scratch.buffer, scratch.byteOffset, scratch.length);

/** Makes the scratch hold at least `bytes`, keeping its first `used`. */
function reserve(bytes: number, used: number): void {
  if (bytes <= scratch.length) return;
  const larger = Buffer.allocUnsafeSlow(Math.max(bytes, 2 * scratch.length)) as Bytes;
  scratch.copy(larger, 0, 0, used);
  scratch = larger;
  scratchView = new DataView(larger.buffer, larger.byteOffset, larger.length);
}

const writers = new Map<string, ShapeWriter>();

/**
 * Writes the batches of one channel shaped where they have a shape. It keeps the
 * shape of the last batch, so a stream of one shape is checked and written in one
 * pass. A batch without a shape makes it skip the next batches untried: 1 after one
 * such batch, twice as many after each further one in a row, up to SKIP_AFTER_MISS,
 * so a stream without a shape pays little and one whose shape changed now and then
 * soon goes shaped again.
 */
export class ShapedBatchWriter {
  private writer: ShapeWriter | null = null;
  private skip = 0;
  /** Batches to skip after the next miss. */
  private backoff = 1;

  /**
   * Writes the records as a shaped batch after `front` free bytes (for the length)
   * into the thread's scratch; the batch's bytes with the front, or null when the
   * records have no shape (msgpackr packs them).
   */
  write(records: readonly unknown[], front: number): Buffer | null {
    if (records.length === 0) return null;
    if (this.skip > 0) {
      this.skip--;
      return null;
    }
    let end = this.writer === null ? -1 : writeBatch(this.writer, records, front);
    if (end < 0) {
      this.writer = detectWriter(records);
      end = this.writer === null ? -1 : writeBatch(this.writer, records, front);
    }
    if (end < 0) {
      this.writer = null;
      this.skip = this.backoff;
      this.backoff = Math.min(2 * this.backoff, SKIP_AFTER_MISS);
      return null;
    }
    this.backoff = 1;
    return scratch.subarray(0, end);
  }
}

/** The most batches not tried for a shape after one that had none. */
export const SKIP_AFTER_MISS = 64;

/** The writer of the records' shape, or of every second one's, each after a number (its timestamp); null if they have none. */
function detectWriter(records: readonly unknown[]): ShapeWriter | null {
  const shape = detectShape(records);
  if (shape !== null) return writerFor(shape, false);
  if (records.length % 2 !== 0) return null;
  const timed: unknown[] = [];
  for (let i = 0; i < records.length; i += 2) {
    if (typeof records[i] !== 'number') return null;
    timed.push(records[i + 1]);
  }
  const recordShape = detectShape(timed);
  return recordShape === null ? null : writerFor(recordShape, true);
}

/** Writes the batch into the scratch after `front` bytes; its end, or -1 if a record does not fit the shape. */
function writeBatch(writer: ShapeWriter, records: readonly unknown[], front: number): number {
  if (scratch.length > LARGE_SCRATCH) reserveFresh();
  if (writer.timed && records.length % 2 !== 0) return -1;
  const count = writer.timed ? records.length / 2 : records.length;
  if (count > MAX_RECORDS) return -1;
  const flags = writer.timed ? TIMED : 0;
  const descriptor = writer.descriptor;
  const rows = front + PREFIX_BYTES + descriptor.length;
  const stringsStart = rows + count * writer.rowBytes;
  if (stringsStart > MAX_BATCH_END) return -1;
  reserve(stringsStart, 0);
  const strings = writer.fill(records, count, scratchView, rows);
  if (strings === null) return -1;
  scratchView.setUint32(front, count, true);
  descriptor.copy(scratch, front + PREFIX_BYTES);
  if (strings.length === 0) {
    scratch[front + 4] = ASCII | flags;
    return stringsStart;
  }
  reserve(stringsStart + 3 * strings.length, stringsStart);
  const bytes = scratch.utf8Write(strings, stringsStart);
  if (bytes === strings.length) {
    scratch[front + 4] = ASCII | flags;
    return stringsStart + bytes;
  }
  scratch[front + 4] = flags;
  return rewriteStrings(writer, records, count, rows, stringsStart);
}

/**
 * A batch with a string that is not ASCII: its strings again, each encoded on its
 * own with its byte length in its row, for the reader to decode one by one. A lone
 * surrogate becomes U+FFFD, as msgpackr writes it.
 */
function rewriteStrings(writer: ShapeWriter, records: readonly unknown[], count: number, rows: number, stringsStart: number): number {
  const { shape, rowBytes, timed } = writer;
  const keys = shape.keys;
  const objects = shape.layout === ShapeLayout.OBJECT;
  let position = stringsStart;
  for (let i = 0; i < count; i++) {
    const record = records[timed ? 2 * i + 1 : i] as Record<string | number, string>;
    for (const { offset, field } of writer.strings) {
      const value = objects ? record[keys[field]] : record[field];
      reserve(position + 3 * value.length, position);
      const bytes = scratch.utf8Write(value, position);
      scratchView.setUint32(rows + i * rowBytes + offset, bytes, true);
      position += bytes;
    }
  }
  return position > MAX_BATCH_END ? -1 : position;
}

function reserveFresh(): void {
  scratch = Buffer.allocUnsafeSlow(INITIAL_SCRATCH) as Bytes;
  scratchView = new DataView(scratch.buffer, scratch.byteOffset, scratch.length);
}

/** The largest end of a batch in the scratch: its length word and 0x3fffffff bytes. */
const MAX_BATCH_END = 0x3fff_ffff;

function writerFor(shape: RecordShape, timed: boolean): ShapeWriter {
  const signature = `${timed ? 'timed ' : ''}${shapeSignature(shape)}`;
  let writer = writers.get(signature);
  if (writer === undefined) {
    if (writers.size >= MAX_CACHED_SHAPES) writers.clear();
    writer = compileWriter(shape, timed);
    writers.set(signature, writer);
  }
  return writer;
}

function descriptorOf(shape: RecordShape): Buffer {
  const keys = shape.keys.map((key) => Buffer.from(key, 'utf8'));
  const descriptor = Buffer.alloc(2 + shape.types.length + keys.reduce((sum, key) => sum + 2 + key.length, 0));
  descriptor[0] = shape.layout;
  descriptor[1] = shape.types.length;
  let position = 2;
  for (const type of shape.types) descriptor[position++] = type;
  for (const key of keys) {
    descriptor.writeUInt16LE(key.length, position);
    position += 2 + key.copy(descriptor, position + 2);
  }
  return descriptor;
}

/** Where each field sits in a row, and the row's size; a timed row's fields follow its timestamp. */
function rowLayout(types: readonly FieldType[], timed: boolean): { offsets: number[]; rowBytes: number } {
  const offsets: number[] = [];
  let rowBytes = timed ? TIMESTAMP_BYTES : 0;
  for (const type of types) {
    offsets.push(rowBytes);
    rowBytes += FIELD_BYTES[type];
  }
  return { offsets, rowBytes };
}

/**
 * The writer of one shape, compiled: a loop that checks each record against the shape
 * (a plain object's keys in order through for-in, a plain array's length, each value's
 * type) while it writes its row, the field accesses literal so that V8 keeps them
 * monomorphic. A plain object or array is one whose `constructor` is Object or Array, as
 * msgpackr decides it (Object.getPrototypeOf is a runtime call: 9 ns a record).
 */
function compileWriter(shape: RecordShape, timed: boolean): ShapeWriter {
  const { offsets, rowBytes } = rowLayout(shape.types, timed);
  const objects = shape.layout === ShapeLayout.OBJECT;
  const n = shape.types.length;
  const lines: string[] = ['let s = "";', 'for (let i = 0; i < count; i++) {'];
  if (timed) lines.push('  const t = records[2 * i];', '  if (typeof t !== "number") return null;', '  view.setFloat64(p, t, true);');
  lines.push(`  const r = records[${timed ? '2 * i + 1' : 'i'}];`, '  if (typeof r !== "object" || r === null || r.constructor !== CONSTRUCTOR) return null;');
  if (objects) lines.push('  let k = 0;', '  for (const key in r) if (key !== KEYS[k++]) return null;', `  if (k !== ${n}) return null;`);
  else lines.push(`  if (r.length !== ${n}) return null;`);
  shape.types.forEach((type, f) => {
    const value = `v${f}`;
    const at = `p + ${offsets[f]}`;
    lines.push(`  const ${value} = r[${objects ? JSON.stringify(shape.keys[f]) : f}];`);
    switch (type) {
      case FieldType.STRING:
        lines.push(
          `  if (typeof ${value} !== "string" || s.length + ${value}.length > ${MAX_STRING_UNITS}) return null;`,
          `  view.setUint32(${at}, ${value}.length, true);`,
          `  s += ${value};`,
        );
        break;
      case FieldType.INT32:
        lines.push(`  if (typeof ${value} !== "number" || (${value} | 0) !== ${value}) return null;`, `  view.setInt32(${at}, ${value}, true);`);
        break;
      case FieldType.FLOAT64:
        lines.push(`  if (typeof ${value} !== "number") return null;`, `  view.setFloat64(${at}, ${value}, true);`);
        break;
      case FieldType.BOOLEAN:
        lines.push(`  if (typeof ${value} !== "boolean") return null;`, `  view.setUint8(${at}, ${value} ? 1 : 0);`);
        break;
      case FieldType.NULL:
        lines.push(`  if (${value} !== null) return null;`);
        break;
    }
  });
  lines.push(`  p += ${rowBytes};`, '}', 'return s;');
  const body = `return function fillRows(records, count, view, p) {\n${lines.join('\n')}\n};`;
  const fill = new Function('CONSTRUCTOR', 'KEYS', body)(objects ? Object : Array, shape.keys) as FillRows;
  const strings = shape.types.flatMap((type, field) => (type === FieldType.STRING ? [{ offset: offsets[field], field }] : []));
  return { shape, timed, descriptor: descriptorOf(shape), rowBytes, strings, fill };
}

/**
 * The strings of a batch, handed out in row order: an ASCII batch's decoded a chunk at
 * a time and sliced, another's decoded one by one.
 */
class StringRegion {
  private segment: Bytes = EMPTY;
  private position = 0;
  private end = 0;
  private ascii = false;
  private chunk = '';
  private chunkStart = 0;
  private chunkEnd = 0;

  reset(segment: Bytes, start: number, end: number, ascii: boolean): void {
    this.segment = segment;
    this.position = start;
    this.end = end;
    this.ascii = ascii;
    this.chunk = '';
    this.chunkStart = this.chunkEnd = start;
  }

  /** The next string, `bytes` long. */
  next(bytes: number): string {
    const start = this.position;
    const end = start + bytes;
    if (end > this.end) throw corrupt('its strings run past its end');
    this.position = end;
    if (!this.ascii) return this.segment.utf8Slice(start, end);
    if (end <= this.chunkEnd) return this.chunk.slice(start - this.chunkStart, end - this.chunkStart);
    if (bytes >= OWN_STRING) return this.segment.latin1Slice(start, end);
    this.chunkStart = start;
    this.chunkEnd = Math.min(start + CHUNK, this.end);
    this.chunk = this.segment.latin1Slice(start, this.chunkEnd);
    return this.chunk.slice(0, bytes);
  }

  /** Fails unless every string was read: a corrupt batch must not pass for a shorter one. */
  finish(): void {
    if (this.position !== this.end) throw corrupt('it has bytes after its strings');
  }

  /** Lets go of the segment and the last chunk. */
  release(): void {
    this.segment = EMPTY;
    this.chunk = '';
  }
}

const EMPTY = Buffer.alloc(0) as Bytes;
const region = new StringRegion();

interface ShapeReader {
  readonly rowBytes: number;
  readonly read: ReadRows;
}

const readers = new Map<string, ShapeReader>();

/** The records of the shaped batch in segment[start, end) (after its length word). */
export function readShapedBatch(segment: Buffer, start: number, end: number): unknown[] {
  const bytes = segment as Bytes;
  if (end - start < PREFIX_BYTES + 2) throw corrupt('it is shorter than its header');
  const view = new DataView(segment.buffer, segment.byteOffset, segment.length);
  const count = view.getUint32(start, true);
  const flags = segment[start + 4];
  if ((flags & ~(ASCII | TIMED)) !== 0) throw corrupt(`its flags are ${flags}`);
  const ascii = (flags & ASCII) !== 0;
  const timed = (flags & TIMED) !== 0;
  const descriptorStart = start + PREFIX_BYTES;
  const descriptorEnd = descriptorEndOf(segment, descriptorStart, end);
  const signature = `${timed ? 'timed ' : ''}${bytes.latin1Slice(descriptorStart, descriptorEnd)}`;
  let reader = readers.get(signature);
  if (reader === undefined) {
    if (readers.size >= MAX_CACHED_SHAPES) readers.clear();
    reader = compileReader(parseDescriptor(bytes, descriptorStart, descriptorEnd), timed);
    readers.set(signature, reader);
  }
  const stringsStart = descriptorEnd + count * reader.rowBytes;
  if (stringsStart > end) throw corrupt(`its ${count} rows run past its end`);
  if (count > MAX_RECORDS) throw corrupt(`it counts ${count} records`);
  region.reset(bytes, stringsStart, end, ascii);
  try {
    const records = reader.read(view, descriptorEnd, count, region);
    region.finish();
    return records;
  } finally {
    region.release();
  }
}

/** Where the SHAPE part that starts at `start` ends. */
function descriptorEndOf(segment: Buffer, start: number, end: number): number {
  const fields = segment[start + 1];
  let position = start + 2 + fields;
  if (segment[start] === ShapeLayout.OBJECT) {
    for (let f = 0; f < fields; f++) {
      if (position + 2 > end) throw corrupt('its shape runs past its end');
      position += 2 + segment.readUInt16LE(position);
    }
  }
  if (position > end) throw corrupt('its shape runs past its end');
  return position;
}

function parseDescriptor(segment: Bytes, start: number, end: number): RecordShape {
  const layout = segment[start] as ShapeLayout;
  const fields = segment[start + 1];
  if ((layout !== ShapeLayout.OBJECT && layout !== ShapeLayout.ARRAY) || fields > MAX_FIELDS) throw corrupt(`its shape (layout ${layout}, ${fields} fields) is not one we write`);
  const types: FieldType[] = [];
  for (let f = 0; f < fields; f++) {
    const type = segment[start + 2 + f] as FieldType;
    if (FIELD_BYTES[type] === undefined) throw corrupt(`field ${f} has the type ${type}`);
    types.push(type);
  }
  const keys: string[] = [];
  let position = start + 2 + fields;
  if (layout === ShapeLayout.OBJECT) {
    for (let f = 0; f < fields; f++) {
      const length = segment.readUInt16LE(position);
      const key = segment.utf8Slice(position + 2, position + 2 + length);
      if (key === '__proto__') throw corrupt('a key is __proto__');
      keys.push(key);
      position += 2 + length;
    }
  }
  if (position !== end) throw corrupt('its shape has bytes to spare');
  return { layout, keys, types };
}

/**
 * The reader of one shape, compiled: each record built as one literal (`{"key": v0,
 * "payload": v1}` or `[v0, v1]`), its values read first in field order, so that every
 * record of the shape gets the same hidden class in V8.
 */
function compileReader(shape: RecordShape, timed: boolean): ShapeReader {
  const { offsets, rowBytes } = rowLayout(shape.types, timed);
  const lines: string[] = [`const out = new Array(${timed ? '2 * count' : 'count'});`, 'for (let i = 0; i < count; i++) {'];
  if (timed) lines.push('  out[2 * i] = view.getFloat64(p, true);');
  shape.types.forEach((type, f) => {
    const at = `p + ${offsets[f]}`;
    const read = {
      [FieldType.STRING]: `strings.next(view.getUint32(${at}, true))`,
      [FieldType.INT32]: `view.getInt32(${at}, true)`,
      [FieldType.FLOAT64]: `view.getFloat64(${at}, true)`,
      [FieldType.BOOLEAN]: `view.getUint8(${at}) !== 0`,
      [FieldType.NULL]: 'null',
    }[type];
    lines.push(`  const v${f} = ${read};`);
  });
  const values = shape.types.map((_, f) => `v${f}`);
  const literal = shape.layout === ShapeLayout.OBJECT ? `{${shape.keys.map((key, f) => `${JSON.stringify(key)}: ${values[f]}`).join(', ')}}` : `[${values.join(', ')}]`;
  lines.push(`  out[${timed ? '2 * i + 1' : 'i'}] = ${literal};`, `  p += ${rowBytes};`, '}', 'return out;');
  const read = new Function(`return function readRows(view, p, count, strings) {\n${lines.join('\n')}\n};`)() as ReadRows;
  return { rowBytes, read };
}

function corrupt(why: string): SpillwayError {
  return new SpillwayError('SPW_ERR_CORRUPT_FRAME', `corrupt record stream: a shaped batch whose ${why}`);
}

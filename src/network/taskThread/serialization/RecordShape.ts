/** What every value of one field of a shaped batch is; the number is its code on the wire. */
export enum FieldType {
  STRING = 1,
  /** A number that is an int32 in every record of the batch (-0 among them, which arrives as 0, as msgpackr's). */
  INT32 = 2,
  FLOAT64 = 3,
  BOOLEAN = 4,
  NULL = 5,
}

/** What the records of a shaped batch are; the number is its code on the wire. */
export enum ShapeLayout {
  /** Plain objects with the same keys in the same order. */
  OBJECT = 1,
  /** Arrays of the same length. */
  ARRAY = 2,
}

/** Records of more fields than this are left to msgpackr: a shape is compiled into code, and it stays short. */
export const MAX_FIELDS = 64;
/** A key longer than this (in UTF-16 units, so at most 3x in bytes) is left to msgpackr: its byte length is a u16. */
const MAX_KEY_LENGTH = 0x5555;

/**
 * A batch's shape: its layout, the objects' keys in their order (none for arrays)
 * and each field's type, the same in every record of the batch.
 */
export interface RecordShape {
  readonly layout: ShapeLayout;
  readonly keys: readonly string[];
  readonly types: readonly FieldType[];
}

/**
 * The shape every one of `records` has, or null when they have none: a record that is
 * not a plain object or a plain array, a value that is not a string, number, boolean
 * or null, a field whose type changes, or a key msgpackr treats apart (`__proto__`).
 * A number field is INT32 if every value is an int32, else
 * FLOAT64.
 */
export function detectShape(records: readonly unknown[]): RecordShape | null {
  if (records.length === 0) return null;
  const first = records[0];
  if (typeof first !== 'object' || first === null) return null;
  // Plain as msgpackr decides it: by the constructor.
  const constructor = (first as { constructor?: unknown }).constructor;
  if (constructor === Array) return detectArrays(records, (first as unknown[]).length);
  if (constructor === Object) return detectObjects(records, Object.keys(first));
  return null;
}

function detectArrays(records: readonly unknown[], length: number): RecordShape | null {
  if (length > MAX_FIELDS) return null;
  const types = new Array<FieldType>(length).fill(FieldType.INT32);
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    if (typeof record !== 'object' || record === null || record.constructor !== Array) return null;
    const values = record as unknown[];
    if (values.length !== length) return null;
    for (let f = 0; f < length; f++) if (!fits(types, f, values[f], i === 0)) return null;
  }
  return { layout: ShapeLayout.ARRAY, keys: [], types };
}

function detectObjects(records: readonly unknown[], keys: string[]): RecordShape | null {
  const length = keys.length;
  if (length > MAX_FIELDS) return null;
  for (const key of keys) if (key === '__proto__' || key.length > MAX_KEY_LENGTH) return null;
  const types = new Array<FieldType>(length).fill(FieldType.INT32);
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    if (typeof record !== 'object' || record === null || record.constructor !== Object) return null;
    const own = Object.keys(record);
    if (own.length !== length) return null;
    for (let f = 0; f < length; f++) {
      if (own[f] !== keys[f]) return null;
      if (!fits(types, f, (record as Record<string, unknown>)[keys[f]], i === 0)) return null;
    }
  }
  return { layout: ShapeLayout.OBJECT, keys, types };
}

/** True if the value fits field f's type so far (the first record sets it); an int32 field widens to FLOAT64 for another number. */
function fits(types: FieldType[], f: number, value: unknown, first: boolean): boolean {
  const type = typeOf(value);
  if (type === null) return false;
  if (first || type === types[f]) {
    types[f] = type;
    return true;
  }
  if (type === FieldType.FLOAT64 && types[f] === FieldType.INT32) {
    types[f] = FieldType.FLOAT64;
    return true;
  }
  return type === FieldType.INT32 && types[f] === FieldType.FLOAT64;
}

function typeOf(value: unknown): FieldType | null {
  switch (typeof value) {
    case 'string':
      return FieldType.STRING;
    case 'number':
      return (value | 0) === value ? FieldType.INT32 : FieldType.FLOAT64;
    case 'boolean':
      return FieldType.BOOLEAN;
    case 'object':
      return value === null ? FieldType.NULL : null;
    default:
      return null;
  }
}

/** A string that names the shape, for the caches of compiled writers and readers. */
export function shapeSignature(shape: RecordShape): string {
  return `${shape.layout}:${shape.types.join(',')}:${JSON.stringify(shape.keys)}`;
}

/**
 * What the CSV scanner keeps of a field: nothing (its bytes are stepped over, quotes
 * and all, and never decoded), its byte range (a string made only when read), or its
 * byte range and its value parsed from the bytes as a number.
 */
export enum FieldKind {
  Skip = 0,
  Text = 1,
  Number = 2,
}

/** The kind of each field index a scan keeps: `byIndex`, and `rest` for the fields after them. */
export interface FieldKinds {
  readonly byIndex: readonly FieldKind[];
  readonly rest: FieldKind;
}

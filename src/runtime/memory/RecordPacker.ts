/**
 * What spilling packs records with and reads them back by (a msgpackr Packr and Unpackr), by
 * the one method each is asked: the declarations a user's compiler reads through the operator
 * specs stay free of msgpackr's and Node's types.
 */
export interface RecordPacker {
  pack(record: unknown): Uint8Array;
}
export interface RecordUnpacker {
  unpack(bytes: Uint8Array): unknown;
}

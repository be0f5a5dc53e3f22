/** What a key is to a job: any value a key function returns (hashed and ordered by src/keys/). */
export type Key = unknown;

/** The key of a record: a hash partitioning's, a keyed operator's. */
export type KeyFn = (record: unknown) => Key;

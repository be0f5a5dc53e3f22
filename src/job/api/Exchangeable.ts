/**
 * What may cross an exchange, checked by the compiler: the values the engine's
 * msgpackr packing (channelPackr / channelUnpackr, `sequential` records) gives back
 * as they were sent. Measured, not assumed (test/unit/exchangeable.test.ts round-trips
 * every shape accepted here through the engine's serializer):
 *
 * - kept: string, number, boolean, null, undefined, bigint (64-bit range: a larger
 *   one fails loudly when packed), arrays and tuples, plain objects, Uint8Array
 *   (it arrives as a Buffer, which is a Uint8Array), Date, Map;
 * - lost, so refused: functions (dropped), symbols (packing throws), objects with
 *   methods, i.e. class instances such as Set (arrives as an array), RegExp and
 *   Error (arrive as arrays), and typed arrays other than Uint8Array (arrive as
 *   bytes).
 *
 * Not visible to the type system, so not refused: -0 arrives as 0 (as it is in
 * msgpackr's batches; a shaped batch keeps it in a field that holds other non-integers); a class instance
 * without methods arrives as a plain object with its own fields (no prototype, no
 * getters); a sparse array's holes arrive as undefined.
 */

/** Stands where a part of a type cannot cross an exchange; the compiler's message quotes it. */
export type NotExchangeable<Why extends string> = `not Exchangeable: ${Why}`;

/** Values that are kept as they are. */
export type ExchangeScalar = string | number | boolean | bigint | null | undefined;

/**
 * T itself when every part of T crosses an exchange unchanged; otherwise T with each
 * offending part replaced by a NotExchangeable message. A type parameter constrained
 * by `R extends Exchangeable<R>` therefore accepts exactly the exchangeable types,
 * and the compiler's error names the part that is not.
 */
export type Exchangeable<T> = T extends ExchangeScalar
  ? T
  : T extends Uint8Array
    ? T
    : T extends ArrayBufferView
      ? NotExchangeable<'a typed array other than Uint8Array (it arrives as bytes)'>
      : T extends Date
        ? T
        : T extends (...args: never[]) => unknown
          ? NotExchangeable<'a function'>
          : T extends symbol
            ? NotExchangeable<'a symbol'>
            : T extends Map<infer K, infer V>
              ? Map<Exchangeable<K>, Exchangeable<V>>
              : T extends ReadonlyMap<infer K, infer V>
                ? ReadonlyMap<Exchangeable<K>, Exchangeable<V>>
                : T extends ReadonlySet<unknown>
                  ? NotExchangeable<'a Set (it arrives as an array)'>
                  : T extends Error
                    ? NotExchangeable<'an Error (it arrives as an array)'>
                    : T extends readonly unknown[]
                      ? { [I in keyof T]: Exchangeable<T[I]> }
                      : T extends object
                        ? { [P in keyof T]: P extends symbol ? NotExchangeable<'a symbol-keyed property'> : Exchangeable<T[P]> }
                        : NotExchangeable<'an unknown type'>;

/**
 * What a key may be: hashed the same in every process (StableHash) and grouped by
 * value, not identity (keyed operators hold keys in a Map). Arrays and objects hash
 * stably but are grouped by identity, so two equal tuple keys would stay apart: make
 * a composite key a string.
 */
export type Key = string | number | boolean | bigint | null | undefined;

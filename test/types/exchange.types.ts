/**
 * Type tests, run by `tsc` (npm run typecheck), never executed: each refusal is a
 * `@ts-expect-error` line (tsc fails if the line compiles), each acceptance a plain
 * line (tsc fails if it does not). A refusal sits at the call that makes the
 * exchange: keyBy, partitionByHash / partitionByRange, rebalance, broadcast,
 * forward, collect, and a combine's combiner.
 */
import { JobBuilder, type KeyedStream, type SpillingFold, type Stream } from '../../src/index.js';
import { exchangeable } from './shapes.js';

const job = new JobBuilder('types');
const of = <T>(...records: T[]): Stream<T> => job.generate(() => records);

class WithMethod {
  x = 1;
  double(): number {
    return this.x * 2;
  }
}
interface Event {
  id: number;
  kind: 'click' | 'view';
  at: Date;
  tags?: readonly string[];
}
const symbolKey = Symbol('k');

// --- Refused: what msgpackr would drop or change -------------------------------------

// @ts-expect-error a class instance with methods loses them
of(new WithMethod()).rebalance();
// @ts-expect-error a function-valued field is dropped
of({ id: 1, f: (): number => 1 }).keyBy((r) => r.id);
// @ts-expect-error a function record
of((): number => 1).broadcast();
// @ts-expect-error a symbol cannot be packed
of({ s: Symbol('s') }).forward();
// @ts-expect-error a symbol-keyed property is dropped
of({ [symbolKey]: 1, n: 2 }).rebalance();
// @ts-expect-error a Set arrives as an array
of(new Set([1])).rebalance();
// @ts-expect-error an Error arrives as an array
of(new Error('x')).rebalance();
// @ts-expect-error a RegExp has methods
of(/x/).rebalance();
// @ts-expect-error a Promise has methods
of(Promise.resolve(1)).rebalance();
// @ts-expect-error a typed array other than Uint8Array arrives as bytes
of(new Float64Array(1)).rebalance();
// @ts-expect-error a method deep inside a record
of({ outer: [{ inner: new WithMethod() }] }).partitionByHash((r) => r.outer.length);
// @ts-expect-error a Map whose values have methods
of(new Map([['k', new WithMethod()]])).rebalance();
// @ts-expect-error refused at partitionByRange too
of(new WithMethod()).partitionByRange((r) => r.x, () => [0]);
// @ts-expect-error collected records are packed to the JobManager
of(new WithMethod()).collect();
// @ts-expect-error a combiner crosses the exchange: refused at mergeCombiners
of('w').keyBy((w) => w).combine({ create: () => new WithMethod(), merge: (c) => c, mergeCombiners: (a) => a });
// @ts-expect-error a stream of unknown records is not known to cross
job.generate((): unknown[] => []).rebalance();

// --- Refused: keys are primitives, hashed and grouped by value -------------------------

// @ts-expect-error a tuple key is grouped by identity
of<[string, number]>(['a', 1]).keyBy((r) => [r[0], r[1]]);
// @ts-expect-error an object key
of(1).keyBy((n) => ({ n }));
// @ts-expect-error a Date key
of(new Date()).keyBy((d) => d);
// @ts-expect-error a sort key too
of(1).sortBy((n) => [n]);

// --- Refused: mismatched types --------------------------------------------------------

const byNumber: KeyedStream<[number, string], number> = of<[number, string]>([1, 'a']).keyBy((r) => r[0]);
const byString: KeyedStream<[string, number], string> = of<[string, number]>(['a', 1]).keyBy((r) => r[0]);
// @ts-expect-error a join needs keys of one type
byNumber.join(byString, (l, r) => [l, r]);
// @ts-expect-error a reduce returns the record type
byNumber.reduce((a) => a[1]);
// @ts-expect-error range boundaries are keys
of(1).partitionByRange((n) => n, () => ['a']);
// @ts-expect-error a fold takes the stream's records
of('a').fold((): SpillingFold<number, number> => ({ push: () => {}, finish: async () => {} }));
// @ts-expect-error what a fold emits crosses an exchange only if Exchangeable
of('a').fold((): SpillingFold<string, () => void> => ({ push: () => {}, finish: async () => {} })).rebalance();

// --- Accepted ------------------------------------------------------------------------

of('a', 'b').rebalance().collect();
of(1, 2).broadcast();
of(true).forward();
of(null, undefined).rebalance();
of(1n).rebalance();
of<[string, number]>(['a', 1]).keyBy((r) => r[0]).reduce((a, b) => [a[0], a[1] + b[1]]).collect();
of<Event>({ id: 1, kind: 'view', at: new Date() }).keyBy((e) => e.kind).reduce((a) => a).collect();
of({ bytes: new Uint8Array(2), when: new Date(), index: new Map([[1, ['x']]]) }).partitionByHash((r) => r.bytes.length);
of(Buffer.from('x')).rebalance();
of(new Map<string, Event>()).rebalance();
of<ReadonlyMap<string, number>>(new Map()).rebalance();
of(exchangeable({ fine: [1, 'two', { three: 3 }] })).rebalance();
of('a').fold((memory): SpillingFold<string, [string, number]> => ({ push: () => {}, finish: async (emit) => void (await emit(['a', memory.operatorBudget])) })).collect();
// Anything goes inside a stage: a class with methods may be chained, as long as it does not cross.
of(1).map((n) => new WithMethod().double() + n).rebalance();
of('line').map((l) => new Set(l)).map((s) => s.size).collect();
// What a keyed operator gives is typed: no casts.
const counts: Stream<[string, number]> = of('a b')
  .flatMap<string>((line, emit) => line.split(' ').forEach(emit))
  .keyBy((word) => word)
  .combine({ create: () => 1, merge: (n) => n + 1, mergeCombiners: (a, b) => a + b });
counts.map(([word, n]) => `${word.toUpperCase()} ${n.toFixed(0)}`).writeText('/out');
const joined: Stream<[number, string, string]> = byNumber.join(
  of<[number, string]>([1, 'x']).keyBy((r) => r[0]),
  (l, r) => [l[0], l[1], r[1]],
);
joined.collect();
of(1, 2).partitionByRange((n) => n, (p) => Array.from({ length: p - 1 }, (_, i) => i)).sortBy((n) => n).writeText('/sorted');
of({ n: 1 }).aggregate(() => ({ sum: 0 }), (acc, r) => ({ sum: acc.sum + r.n })).map((a) => a.sum).collect();

// --- The shape helper itself ------------------------------------------------------------

// @ts-expect-error the helper refuses what the builder refuses
exchangeable(new WithMethod());
// @ts-expect-error and what is inside
exchangeable({ list: [new Set([1])] });
exchangeable({ list: [new Map([[1, 1]])] });

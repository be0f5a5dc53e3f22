/**
 * The Nexmark benchmark's queries (nexmark-flink's q0-q5, q7, q8, q11), written with the
 * public API as built-in jobs `nexmark-q0` ... `nexmark-q11`. Each reads one Nexmark
 * source, gives its events their event time (bounded out-of-orderness of 4 s, as the
 * suite's DDL), and writes its rows to a collect sink, to `output` as text, or nowhere
 * with `sink=discard`. Where a query reads two kinds of event (q3, q4, q8), both travel
 * one keyed exchange and one operator tells them apart: the source is read once.
 */
import type { Auction, Bid, NexmarkEvent, Person } from '../../../connectors/nexmark/NexmarkGenerator.js';
import { eventTime } from '../../../connectors/nexmark/NexmarkModel.js';
import { session, sliding, tumbling } from '../../../runtime/windows/WindowAssigner.js';
import { JobBuilder } from '../../api/JobBuilder.js';
import type { Stream } from '../../api/Stream.js';
import type { JobDefinition } from '../../JobDefinition.js';
import { numberParam } from '../../Params.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** The suite's windows: 10 s, sliding every 2 s for q5; sessions of a 10 s gap for q11. */
const WINDOW_MS = 10_000;
const SLIDE_MS = 2_000;
const SESSION_GAP_MS = 10_000;
/** The suite's watermark: 4 s behind the latest event time. */
const OUT_OF_ORDERNESS_MS = 4_000;
/** q1's dollar-to-euro rate. */
const EURO = 0.908;
/** q3's category and states. */
const Q3_CATEGORY = 10;
const Q3_STATES = new Set(['OR', 'ID', 'CA']);
/** q4: bids waiting for an auction that has not come yet are dropped this long after their time. */
const PENDING_BID_MS = 60_000;

/** A query's rows: flat records of numbers and strings, which cross an exchange as they are. */
type Row = Record<string, number | string>;
type Query = (events: Stream<NexmarkEvent>) => Stream<Row>;

/** A query's rows with their own type left behind, for the one sink every query ends in. */
function rows<T extends object>(stream: Stream<T>): Stream<Row> {
  return stream as unknown as Stream<Row>;
}

const bids = (events: Stream<NexmarkEvent>): Stream<Bid> => events.filter((e) => e.type === 'bid').map((e) => (e as { bid: Bid }).bid);

const QUERIES: Record<string, Query> = {
  /** Pass-through: every bid. */
  q0: (events) => rows(bids(events)),

  /** Currency conversion: every bid's price in euro. */
  q1: (events) => rows(bids(events).map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price * EURO, dateTime: b.dateTime, extra: b.extra }))),

  /** Selection: the bids of every 123rd auction. */
  q2: (events) =>
    rows(
      bids(events)
        .filter((b) => b.auction % 123 === 0)
        .map((b) => ({ auction: b.auction, price: b.price })),
    ),

  /** Local item suggestion: auctions of category 10 by sellers in OR, ID or CA, joined with their seller as either comes. */
  q3: (events) =>
    rows(
      events
        .filter((e) => (e.type === 'auction' && e.auction.category === Q3_CATEGORY) || (e.type === 'person' && Q3_STATES.has(e.person.state)))
        .keyBy((e) => (e.type === 'auction' ? e.auction.seller : (e as { person: Person }).person.id))
        .process<{ name: string; city: string; state: string; id: number }>({
          processElement(e, ctx, emit) {
            const seller = ctx.state.value<Person>('person');
            const waiting = ctx.state.list<number>('auctions');
            if (e.type === 'person') {
              seller.set(e.person);
              for (const id of waiting.get()) emit({ name: e.person.name, city: e.person.city, state: e.person.state, id });
              waiting.clear();
              return;
            }
            const person = seller.get();
            const id = (e as { auction: Auction }).auction.id;
            if (person) emit({ name: person.name, city: person.city, state: person.state, id });
            else waiting.add(id);
          },
        }),
    ),

  /**
   * Average price for a category: each auction's winning price (its highest bid between
   * its start and its expiry), given once the auction expires in event time, then a
   * running average of them per category, updated with each.
   */
  q4: (events) =>
    rows(
      events
        .filter((e) => e.type === 'auction' || e.type === 'bid')
        .keyBy((e) => (e.type === 'auction' ? e.auction.id : (e as { bid: Bid }).bid.auction))
        .process<{ category: number; final: number }>({
          processElement(e, ctx) {
            const auction = ctx.state.value<Auction>('auction');
            const best = ctx.state.value<number>('best');
            if (e.type === 'auction') {
              auction.set(e.auction);
              ctx.timers.registerEventTime(e.auction.expires);
              const pending = ctx.state.list<Bid>('pending');
              for (const b of pending.get()) if (valid(e.auction, b)) best.set(Math.max(best.get() ?? -1, b.price));
              pending.clear();
              return;
            }
            const bid = (e as { bid: Bid }).bid;
            const known = auction.get();
            if (known === undefined) {
              ctx.state.list<Bid>('pending').add(bid);
              ctx.timers.registerEventTime(bid.dateTime + PENDING_BID_MS);
            } else if (valid(known, bid)) best.set(Math.max(best.get() ?? -1, bid.price));
          },
          onTimer(time, ctx, emit) {
            const auction = ctx.state.value<Auction>('auction');
            const known = auction.get();
            if (known !== undefined && time === known.expires) {
              const best = ctx.state.value<number>('best');
              const final = best.get();
              if (final !== undefined) emit({ category: known.category, final });
              auction.clear();
              best.clear();
            } else if (known === undefined) ctx.state.list<Bid>('pending').clear();
          },
        })
        .keyBy((w) => w.category)
        .process<{ category: number; avg: number }>({
          processElement(w, ctx, emit) {
            const sum = ctx.state.value<[number, number]>('sum');
            const [total, count] = sum.get() ?? [0, 0];
            sum.set([total + w.final, count + 1]);
            emit({ category: w.category, avg: (total + w.final) / (count + 1) });
          },
        }),
    ),

  /** Hot items: per sliding window of 10 s every 2 s, the auctions with the most bids. */
  q5: (events) =>
    rows(
      bids(events)
        .keyBy((b) => b.auction)
        .window(sliding(WINDOW_MS, SLIDE_MS))
        .aggregate({ create: () => 0, add: (n: number) => n + 1, merge: (a, b) => a + b, result: (n) => n })
        .keyBy((w) => w.start)
        .process<{ auction: number; num: number; start: number; end: number }>({
          processElement(w, ctx) {
            ctx.state.list<[number, number]>('counts').add([w.key, w.value]);
            ctx.timers.registerEventTime(w.end - 1);
          },
          onTimer(time, ctx, emit) {
            const counts = ctx.state.list<[number, number]>('counts');
            let max = 0;
            for (const [, num] of counts.get()) if (num > max) max = num;
            const start = time + 1 - WINDOW_MS;
            for (const [auction, num] of counts.get()) if (num === max) emit({ auction, num, start, end: start + WINDOW_MS });
            counts.clear();
          },
        }),
    ),

  /** Highest bid: per tumbling window of 10 s, the bids at its highest price. */
  q7: (events) =>
    rows(
      bids(events)
        .windowAll(tumbling(WINDOW_MS))
        .aggregate<{ max: number; bids: Bid[] }, Bid[]>({
          create: () => ({ max: -1, bids: [] }),
          add: (acc, b) => {
            if (b.price > acc.max) return { max: b.price, bids: [b] };
            if (b.price === acc.max) acc.bids.push(b);
            return acc;
          },
          merge: (a, b) => (a.max > b.max ? a : b.max > a.max ? b : { max: a.max, bids: [...a.bids, ...b.bids] }),
          result: (acc) => acc.bids,
        })
        .flatMap((w) => w.value.map((b) => ({ auction: b.auction, price: b.price, bidder: b.bidder, dateTime: b.dateTime, extra: b.extra }))),
    ),

  /** Monitor new users: each person with each auction of theirs in the same tumbling window of 10 s (a windowed join). */
  q8: (events) =>
    rows(
      events
        .filter((e) => e.type === 'person' || e.type === 'auction')
        .keyBy((e) => (e.type === 'person' ? e.person.id : (e as { auction: Auction }).auction.seller))
        .window(tumbling(WINDOW_MS))
        .aggregate<{ names: string[]; auctions: number }, { names: string[]; auctions: number }>({
          create: () => ({ names: [], auctions: 0 }),
          add: (acc, e) => {
            if (e.type === 'person') acc.names.push(e.person.name);
            else acc.auctions++;
            return acc;
          },
          merge: (a, b) => ({ names: [...a.names, ...b.names], auctions: a.auctions + b.auctions }),
          result: (acc) => acc,
        })
        .flatMap<{ id: number; name: string; starttime: number }>((w, emit) => {
          for (const name of w.value.names) for (let i = 0; i < w.value.auctions; i++) emit({ id: w.key, name, starttime: w.start });
        }),
    ),

  /** User sessions: each bidder's bids in session windows of a 10 s gap. */
  q11: (events) =>
    rows(
      bids(events)
        .keyBy((b) => b.bidder)
        .window(session(SESSION_GAP_MS))
        .aggregate({ create: () => 0, add: (n: number) => n + 1, merge: (a, b) => a + b, result: (n) => n })
        .map((w) => ({ bidder: w.key, count: w.value, start: w.start, end: w.end })),
    ),
};

/** A bid counts for its auction between the auction's start and its expiry, both included. */
function valid(auction: Auction, bid: Bid): boolean {
  return bid.dateTime >= auction.dateTime && bid.dateTime <= auction.expires;
}

/** The built-in jobs: `nexmark-q0` ... `nexmark-q11`, each a function of its params. */
export const NEXMARK_JOBS: Readonly<Record<string, (params: Record<string, unknown>) => JobDefinition>> = Object.fromEntries(
  Object.entries(QUERIES).map(([name, query]) => [`nexmark-${name}`, (params: Record<string, unknown>) => nexmarkJob(`nexmark-${name}`, query, params)]),
);

/**
 * A query over the params' source: `events` in all (unbounded without), `rate` (events
 * per second of event time; given, it paces the generator in wall time too), `seed`;
 * its rows collected, or written to `output`, or dropped with `sink=discard`.
 */
function nexmarkJob(name: string, query: Query, params: Record<string, unknown>): JobDefinition {
  const options = {
    events: params.events === undefined ? undefined : Math.floor(numberParam(params, 'events', 0)),
    rate: params.rate === undefined ? undefined : numberParam(params, 'rate', 0, 1),
    seed: Math.floor(numberParam(params, 'seed', 0)),
  };
  const job = new JobBuilder(name);
  const rows = query(job.nexmark(options).name('events').assignTimestamps(eventTime, { maxOutOfOrderness: OUT_OF_ORDERNESS_MS }));
  if (params.sink === 'discard') rows.discard();
  else if (params.sink !== undefined) throw new SpillwayError('SPW_ERR_INVALID_PARAM', `parameter "sink" may only be "discard", not ${JSON.stringify(params.sink)}`);
  else if (typeof params.output === 'string' && params.output !== '') rows.writeText(params.output);
  else rows.collect();
  return job.build();
}


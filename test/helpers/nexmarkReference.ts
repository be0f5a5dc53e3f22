/**
 * A reference evaluator of the Nexmark queries: plain loops over the whole event list, single
 * threaded, no windows operator and no state, so that the engine's queries can be checked
 * against it row for row. Each query takes the events in any order and returns its rows sorted
 * by sortRows. The semantics are Spillway's, fixed here (they follow nexmark-flink's SQL where
 * it is unambiguous): event time is `dateTime`, windows are half-open [start, end).
 */
import type { Auction, Bid, NexmarkEvent, Person } from '../../src/connectors/nexmark/NexmarkModel.js';

/** Tumbling windows of q7 and q8, the size of q5's sliding windows. */
export const WINDOW_MS = 10_000;
/** How far q5's sliding windows move. */
export const Q5_SLIDE_MS = 2_000;
/** The gap that closes a q11 session. */
export const SESSION_GAP_MS = 10_000;
/** q1's dollar-to-euro rate. */
export const Q1_RATE = 0.908;
/** q3's seller states and auction category. */
export const Q3_STATES: readonly string[] = ['OR', 'ID', 'CA'];
export const Q3_CATEGORY = 10;

export type Q0Row = { auction: number; bidder: number; price: number; channel: string; url: string; dateTime: number; extra: string };
export type Q1Row = { auction: number; bidder: number; price: number; dateTime: number; extra: string };
export type Q2Row = { auction: number; price: number };
export type Q3Row = { name: string; city: string; state: string; id: number };
export type Q4Row = { category: number; avg: number };
export type Q5Row = { auction: number; num: number; start: number; end: number };
export type Q7Row = { auction: number; price: number; bidder: number; dateTime: number; extra: string };
export type Q8Row = { id: number; name: string; starttime: number };
export type Q11Row = { bidder: number; count: number; start: number; end: number };

type Row = Record<string, string | number>;

/** Orders two rows field by field, in the order of the first row's keys: numbers by value, strings by UTF-16 code units. */
function compareRows(a: Row, b: Row): number {
  for (const key of Object.keys(a)) {
    const x = a[key];
    const y = b[key];
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return String(x) < String(y) ? -1 : 1;
  }
  return 0;
}

/** A sorted copy of `rows`, in one order whatever the order they came in: compare the engine's rows after sorting them too. */
export function sortRows<T extends Row>(rows: readonly T[]): T[] {
  return [...rows].sort(compareRows);
}

export function bidsOf(events: readonly NexmarkEvent[]): Bid[] {
  const bids: Bid[] = [];
  for (const e of events) if (e.type === 'bid') bids.push(e.bid);
  return bids;
}

export function auctionsOf(events: readonly NexmarkEvent[]): Auction[] {
  const auctions: Auction[] = [];
  for (const e of events) if (e.type === 'auction') auctions.push(e.auction);
  return auctions;
}

export function personsOf(events: readonly NexmarkEvent[]): Person[] {
  const persons: Person[] = [];
  for (const e of events) if (e.type === 'person') persons.push(e.person);
  return persons;
}

/** The start of the tumbling window of `size` that holds `t`. */
function windowStart(t: number, size: number): number {
  return t - (((t % size) + size) % size);
}

/** q0, pass-through: every bid. */
export function q0(events: readonly NexmarkEvent[]): Q0Row[] {
  return sortRows(bidsOf(events).map(({ auction, bidder, price, channel, url, dateTime, extra }) => ({ auction, bidder, price, channel, url, dateTime, extra })));
}

/** q1, currency conversion: every bid, its price times 0.908 (a float, not rounded). */
export function q1(events: readonly NexmarkEvent[]): Q1Row[] {
  return sortRows(bidsOf(events).map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price * Q1_RATE, dateTime: b.dateTime, extra: b.extra })));
}

/** q2, selection: the bids of auctions whose id is a multiple of 123. */
export function q2(events: readonly NexmarkEvent[]): Q2Row[] {
  return sortRows(bidsOf(events).filter((b) => b.auction % 123 === 0).map((b) => ({ auction: b.auction, price: b.price })));
}

/** q3, local item suggestion: auctions of category 10 joined with their sellers from OR, ID or CA, whichever came first. */
export function q3(events: readonly NexmarkEvent[]): Q3Row[] {
  const sellers = new Map<number, Person[]>();
  for (const p of personsOf(events)) {
    if (!Q3_STATES.includes(p.state)) continue;
    const same = sellers.get(p.id);
    if (same) same.push(p);
    else sellers.set(p.id, [p]);
  }
  const rows: Q3Row[] = [];
  for (const a of auctionsOf(events)) {
    if (a.category !== Q3_CATEGORY) continue;
    for (const p of sellers.get(a.seller) ?? []) rows.push({ name: p.name, city: p.city, state: p.state, id: a.id });
  }
  return sortRows(rows);
}

/** The highest price of each auction's bids made while it was open, [dateTime, expires] both ends in; auctions without one are left out. */
export function winningPrices(events: readonly NexmarkEvent[]): { auction: Auction; final: number }[] {
  const bidsByAuction = new Map<number, Bid[]>();
  for (const b of bidsOf(events)) {
    const same = bidsByAuction.get(b.auction);
    if (same) same.push(b);
    else bidsByAuction.set(b.auction, [b]);
  }
  const winners: { auction: Auction; final: number }[] = [];
  for (const a of auctionsOf(events)) {
    let final = -Infinity;
    for (const b of bidsByAuction.get(a.id) ?? []) {
      if (b.dateTime >= a.dateTime && b.dateTime <= a.expires && b.price > final) final = b.price;
    }
    if (final !== -Infinity) winners.push({ auction: a, final });
  }
  return winners;
}

/** q4, average price per category: the mean of the winning prices of its auctions (sum / count; the sum of integers is exact). */
export function q4(events: readonly NexmarkEvent[]): Q4Row[] {
  const byCategory = new Map<number, { sum: number; count: number }>();
  for (const { auction, final } of winningPrices(events)) {
    const acc = byCategory.get(auction.category) ?? { sum: 0, count: 0 };
    acc.sum += final;
    acc.count++;
    byCategory.set(auction.category, acc);
  }
  return sortRows([...byCategory].map(([category, { sum, count }]) => ({ category, avg: sum / count })));
}

/**
 * q5, hot items: in each sliding window of 10 s every 2 s ([start, start + 10 s) for each start
 * a multiple of 2 s), the auctions with the most bids (every one of them on a tie).
 */
export function q5(events: readonly NexmarkEvent[]): Q5Row[] {
  // window start -> auction -> bids
  const counts = new Map<number, Map<number, number>>();
  for (const b of bidsOf(events)) {
    const last = windowStart(b.dateTime, Q5_SLIDE_MS);
    for (let start = last; start > b.dateTime - WINDOW_MS; start -= Q5_SLIDE_MS) {
      let window = counts.get(start);
      if (!window) counts.set(start, (window = new Map()));
      window.set(b.auction, (window.get(b.auction) ?? 0) + 1);
    }
  }
  const rows: Q5Row[] = [];
  for (const [start, window] of counts) {
    const max = Math.max(...window.values());
    for (const [auction, num] of window) if (num === max) rows.push({ auction, num, start, end: start + WINDOW_MS });
  }
  return sortRows(rows);
}

/** q7, highest bid: in each tumbling window of 10 s, the bids at its highest price (every one of them on a tie). */
export function q7(events: readonly NexmarkEvent[]): Q7Row[] {
  const byWindow = new Map<number, Bid[]>();
  for (const b of bidsOf(events)) {
    const start = windowStart(b.dateTime, WINDOW_MS);
    const same = byWindow.get(start);
    if (same) same.push(b);
    else byWindow.set(start, [b]);
  }
  const rows: Q7Row[] = [];
  for (const bids of byWindow.values()) {
    let max = -Infinity;
    for (const b of bids) if (b.price > max) max = b.price;
    for (const b of bids) if (b.price === max) rows.push({ auction: b.auction, price: b.price, bidder: b.bidder, dateTime: b.dateTime, extra: b.extra });
  }
  return sortRows(rows);
}

/** q8, monitor new users: a row for each pair of a person and an auction of theirs made in the same tumbling 10 s window. */
export function q8(events: readonly NexmarkEvent[]): Q8Row[] {
  const key = (id: number, start: number): string => `${id}@${start}`;
  const persons = new Map<string, Person[]>();
  for (const p of personsOf(events)) {
    const k = key(p.id, windowStart(p.dateTime, WINDOW_MS));
    const same = persons.get(k);
    if (same) same.push(p);
    else persons.set(k, [p]);
  }
  const rows: Q8Row[] = [];
  for (const a of auctionsOf(events)) {
    const start = windowStart(a.dateTime, WINDOW_MS);
    for (const p of persons.get(key(a.seller, start)) ?? []) rows.push({ id: p.id, name: p.name, starttime: start });
  }
  return sortRows(rows);
}

/**
 * q11, user sessions: each bidder's bids in session windows of gap 10 s, merged as Flink merges
 * them: a bid at t opens [t, t + gap), and windows that overlap or touch merge, so a bid exactly
 * a gap after the last one joins its session. A session ends a gap after its last bid.
 */
export function q11(events: readonly NexmarkEvent[]): Q11Row[] {
  const times = new Map<number, number[]>();
  for (const b of bidsOf(events)) {
    const same = times.get(b.bidder);
    if (same) same.push(b.dateTime);
    else times.set(b.bidder, [b.dateTime]);
  }
  const rows: Q11Row[] = [];
  for (const [bidder, ts] of times) {
    ts.sort((x, y) => x - y);
    let session = { bidder, count: 0, start: ts[0], end: ts[0] + SESSION_GAP_MS };
    for (const t of ts) {
      if (t > session.end) {
        rows.push(session);
        session = { bidder, count: 0, start: t, end: t + SESSION_GAP_MS };
      }
      session.count++;
      session.end = Math.max(session.end, t + SESSION_GAP_MS);
    }
    rows.push(session);
  }
  return sortRows(rows);
}

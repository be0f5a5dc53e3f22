/**
 * A single-threaded reference of the Nexmark suite's SQL queries, with Flink SQL's semantics
 * (windows half-open [start, end), BETWEEN inclusive, AVG of an integral column truncated,
 * timestamps written as `yyyy-MM-dd HH:mm:ss.SSS` in UTC): plain loops over the whole event
 * list, giving each query's final table as rows keyed by the sink's columns.
 */
import type { Auction, Bid, NexmarkEvent, Person } from '../../src/connectors/nexmark/NexmarkModel.js';
import { auctionsOf, bidsOf, personsOf } from './nexmarkReference.js';

export type SqlRow = Record<string, unknown>;

const ts = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const minute = (ms: number): string => new Date(ms).toISOString().slice(11, 16);
const SECOND = 1000;

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

const tumble = (t: number, size: number): number => t - (t % size);

function rankStats(bids: readonly Bid[]): SqlRow {
  const r1 = (b: Bid): boolean => b.price < 10_000;
  const r2 = (b: Bid): boolean => b.price >= 10_000 && b.price < 1_000_000;
  const r3 = (b: Bid): boolean => b.price >= 1_000_000;
  const distinct = (f: (b: Bid) => number, p: (b: Bid) => boolean = () => true): number => new Set(bids.filter(p).map(f)).size;
  return {
    total_bids: bids.length,
    rank1_bids: bids.filter(r1).length,
    rank2_bids: bids.filter(r2).length,
    rank3_bids: bids.filter(r3).length,
    total_bidders: distinct((b) => b.bidder),
    rank1_bidders: distinct((b) => b.bidder, r1),
    rank2_bidders: distinct((b) => b.bidder, r2),
    rank3_bidders: distinct((b) => b.bidder, r3),
    total_auctions: distinct((b) => b.auction),
    rank1_auctions: distinct((b) => b.auction, r1),
    rank2_auctions: distinct((b) => b.auction, r2),
    rank3_auctions: distinct((b) => b.auction, r3),
  };
}

const auctionRow = (a: Auction): SqlRow => ({
  id: a.id,
  itemName: a.itemName,
  description: a.description,
  initialBid: a.initialBid,
  reserve: a.reserve,
  dateTime: ts(a.dateTime),
  expires: ts(a.expires),
  seller: a.seller,
  category: a.category,
  extra: a.extra,
});

/** Each auction with its bids between its start and its expiry, both included. */
function validBids(events: readonly NexmarkEvent[]): { auction: Auction; bids: Bid[] }[] {
  const byAuction = groupBy(bidsOf(events), (b) => String(b.auction));
  return auctionsOf(events).map((auction) => ({ auction, bids: (byAuction.get(String(auction.id)) ?? []).filter((b) => b.dateTime >= auction.dateTime && b.dateTime <= auction.expires) }));
}

export const SQL_REFERENCE: Record<string, (events: readonly NexmarkEvent[], extra: { sideInput?: Map<number, string> }) => SqlRow[]> = {
  q0: (events) => bidsOf(events).map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: ts(b.dateTime), extra: b.extra })),
  q1: (events) => bidsOf(events).map((b) => ({ auction: b.auction, bidder: b.bidder, price: 0.908 * b.price, dateTime: ts(b.dateTime), extra: b.extra })),
  q2: (events) => bidsOf(events).filter((b) => b.auction % 123 === 0).map((b) => ({ auction: b.auction, price: b.price })),
  q3: (events) => {
    const persons = new Map(personsOf(events).filter((p) => ['OR', 'ID', 'CA'].includes(p.state)).map((p) => [p.id, p]));
    return auctionsOf(events).flatMap((a) => {
      const p = persons.get(a.seller);
      return a.category === 10 && p ? [{ name: p.name, city: p.city, state: p.state, id: a.id }] : [];
    });
  },
  q4: (events) => {
    const finals = validBids(events).flatMap(({ auction, bids }) => (bids.length === 0 ? [] : [{ category: auction.category, final: Math.max(...bids.map((b) => b.price)) }]));
    return [...groupBy(finals, (f) => String(f.category))].map(([category, list]) => ({ id: Number(category), final: Math.trunc(list.reduce((s, f) => s + f.final, 0) / list.length) }));
  },
  q5: (events) => {
    const counts = new Map<string, number>();
    for (const b of bidsOf(events)) {
      for (let start = tumble(b.dateTime, 2 * SECOND); start > b.dateTime - 10 * SECOND; start -= 2 * SECOND) {
        const key = `${start}/${b.auction}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    const max = new Map<number, number>();
    for (const [key, n] of counts) {
      const start = Number(key.split('/')[0]);
      max.set(start, Math.max(max.get(start) ?? 0, n));
    }
    return [...counts].flatMap(([key, num]) => {
      const [start, auction] = key.split('/').map(Number) as [number, number];
      return num >= max.get(start)! ? [{ auction, num }] : [];
    });
  },
  q7: (events) => {
    const bids = bidsOf(events);
    const max = new Map<number, number>();
    for (const b of bids) {
      const end = tumble(b.dateTime, 10 * SECOND) + 10 * SECOND;
      max.set(end, Math.max(max.get(end) ?? -Infinity, b.price));
    }
    return [...max].flatMap(([end, price]) =>
      bids.filter((b) => b.price === price && b.dateTime >= end - 10 * SECOND && b.dateTime <= end).map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: ts(b.dateTime), extra: b.extra })),
    );
  },
  q8: (events) => {
    const persons = new Map<string, Person>();
    for (const p of personsOf(events)) persons.set(`${p.id}/${p.name}/${tumble(p.dateTime, 10 * SECOND)}`, p);
    const sellers = new Set(auctionsOf(events).map((a) => `${a.seller}/${tumble(a.dateTime, 10 * SECOND)}`));
    return [...persons].flatMap(([key, p]) => {
      const start = Number(key.split('/').pop());
      return sellers.has(`${p.id}/${start}`) ? [{ id: p.id, name: p.name, stime: ts(start) }] : [];
    });
  },
  q9: (events) =>
    validBids(events).flatMap(({ auction, bids }) => {
      if (bids.length === 0) return [];
      const best = bids.reduce((w, b) => (b.price > w.price || (b.price === w.price && b.dateTime < w.dateTime) ? b : w));
      return [{ ...auctionRow(auction), auction: best.auction, bidder: best.bidder, price: best.price, bid_dateTime: ts(best.dateTime), bid_extra: best.extra }];
    }),
  q11: (events) => {
    const out: SqlRow[] = [];
    for (const [bidder, bids] of groupBy(bidsOf(events), (b) => String(b.bidder))) {
      const times = bids.map((b) => b.dateTime).sort((a, b) => a - b);
      let start = times[0]!;
      let last = start;
      let count = 0;
      for (const t of times) {
        if (t > last + 10 * SECOND) {
          out.push({ bidder: Number(bidder), bid_count: count, starttime: ts(start), endtime: ts(last + 10 * SECOND) });
          start = t;
          count = 0;
        }
        last = t;
        count++;
      }
      out.push({ bidder: Number(bidder), bid_count: count, starttime: ts(start), endtime: ts(last + 10 * SECOND) });
    }
    return out;
  },
  q13: (events, { sideInput }) =>
    bidsOf(events).flatMap((b) => {
      const value = sideInput!.get(b.auction % 10_000);
      return value === undefined ? [] : [{ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: ts(b.dateTime), value }];
    }),
  q14: (events) =>
    bidsOf(events)
      .filter((b) => 0.908 * b.price > 1_000_000 && 0.908 * b.price < 50_000_000)
      .map((b) => {
        const hour = new Date(b.dateTime).getUTCHours();
        return {
          auction: b.auction,
          bidder: b.bidder,
          price: 0.908 * b.price,
          bidTimeType: hour >= 8 && hour <= 18 ? 'dayTime' : hour <= 6 || hour >= 20 ? 'nightTime' : 'otherTime',
          dateTime: ts(b.dateTime),
          extra: b.extra,
          c_counts: [...b.extra].filter((c) => c === 'c').length,
        };
      }),
  q15: (events) => [...groupBy(bidsOf(events), (b) => day(b.dateTime))].map(([d, bids]) => ({ day: d, ...rankStats(bids) })),
  q16: (events) =>
    [...groupBy(bidsOf(events), (b) => `${b.channel}\u0000${day(b.dateTime)}`)].map(([key, bids]) => {
      const [channel, d] = key.split('\u0000') as [string, string];
      return { channel, day: d, minute: bids.map((b) => minute(b.dateTime)).sort().pop(), ...rankStats(bids) };
    }),
  q17: (events) =>
    [...groupBy(bidsOf(events), (b) => `${b.auction}/${day(b.dateTime)}`)].map(([key, bids]) => {
      const [auction, d] = key.split('/') as [string, string];
      const prices = bids.map((b) => b.price);
      const sum = prices.reduce((s, p) => s + p, 0);
      const stats = rankStats(bids);
      return {
        auction: Number(auction),
        day: d,
        total_bids: stats.total_bids,
        rank1_bids: stats.rank1_bids,
        rank2_bids: stats.rank2_bids,
        rank3_bids: stats.rank3_bids,
        min_price: Math.min(...prices),
        max_price: Math.max(...prices),
        avg_price: Math.trunc(sum / prices.length),
        sum_price: sum,
      };
    }),
  q18: (events) =>
    [...groupBy(bidsOf(events), (b) => `${b.bidder}/${b.auction}`)].map(([, bids]) => {
      const b = bids.reduce((w, x) => (x.dateTime > w.dateTime ? x : w));
      return { auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, url: b.url, dateTime: ts(b.dateTime), extra: b.extra };
    }),
  q19: (events) =>
    [...groupBy(bidsOf(events), (b) => String(b.auction))].flatMap(([, bids]) =>
      [...bids]
        .sort((a, b) => b.price - a.price)
        .slice(0, 10)
        .map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, url: b.url, dateTime: ts(b.dateTime), extra: b.extra })),
    ),
  q20: (events) => {
    const auctions = new Map(auctionsOf(events).filter((a) => a.category === 10).map((a) => [a.id, a]));
    return bidsOf(events).flatMap((b) => {
      const a = auctions.get(b.auction);
      if (!a) return [];
      return [{ auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, url: b.url, bid_dateTime: ts(b.dateTime), bid_extra: b.extra, itemName: a.itemName, description: a.description, initialBid: a.initialBid, reserve: a.reserve, auction_dateTime: ts(a.dateTime), expires: ts(a.expires), seller: a.seller, category: a.category, auction_extra: a.extra }];
    });
  },
  q21: (events) =>
    bidsOf(events).flatMap((b) => {
      const known: Record<string, string> = { apple: '0', google: '1', facebook: '2', baidu: '3' };
      const match = /(&|^)channel_id=([^&]*)/.exec(b.url);
      const channelId = known[b.channel.toLowerCase()] ?? match?.[2] ?? null;
      return match || known[b.channel.toLowerCase()] !== undefined ? [{ auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, channel_id: channelId }] : [];
    }),
  q22: (events) =>
    bidsOf(events).map((b) => {
      const parts = b.url.split('/');
      return { auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, dir1: parts[3] ?? null, dir2: parts[4] ?? null, dir3: parts[5] ?? null };
    }),
  q23: (events) => {
    const persons = new Map(personsOf(events).map((p) => [p.id, p]));
    const bySeller = groupBy(auctionsOf(events), (a) => String(a.seller));
    return bidsOf(events).flatMap((b) => {
      const p = persons.get(b.bidder);
      if (!p) return [];
      return (bySeller.get(String(b.bidder)) ?? []).map((a) => ({
        bidder: b.bidder,
        price: b.price,
        channel: b.channel,
        url: b.url,
        bid_extra: b.extra,
        person_id: p.id,
        name: p.name,
        emailAddress: p.emailAddress,
        creditCard: p.creditCard,
        city: p.city,
        state: p.state,
        person_extra: p.extra,
        itemName: a.itemName,
        description: a.description,
        initialBid: a.initialBid,
        reserve: a.reserve,
        auction_dateTime: ts(a.dateTime),
        expires: ts(a.expires),
        seller: a.seller,
        category: a.category,
        auction_extra: a.extra,
      }));
    });
  },
};

/** The final table of a changelog (`{ op, row }` records) or of plain rows: a sorted list of JSON rows. */
export function finalTable(records: readonly unknown[]): string[] {
  const counts = new Map<string, number>();
  for (const record of records) {
    const change = record as { op?: string; row?: SqlRow };
    const isChange = typeof change.op === 'string' && change.row !== undefined && Object.keys(change).length === 2;
    const key = JSON.stringify(isChange ? change.row : record);
    const sign = isChange && (change.op === '-U' || change.op === '-D') ? -1 : 1;
    counts.set(key, (counts.get(key) ?? 0) + sign);
  }
  const out: string[] = [];
  for (const [key, n] of counts) {
    if (n < 0) throw new Error(`a row retracted more often than it was inserted: ${key}`);
    for (let i = 0; i < n; i++) out.push(key);
  }
  return out.sort();
}

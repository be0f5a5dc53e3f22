import { describe, expect, test } from 'vitest';
import {
  AUCTION_ID_LEAD,
  AVG_AUCTION_BYTES,
  AVG_BID_BYTES,
  AVG_PERSON_BYTES,
  DEFAULT_BASE_TIME,
  FIRST_AUCTION_ID,
  FIRST_PERSON_ID,
  NexmarkGenerator,
  PERSON_ID_LEAD,
  eventTime,
  lastBase0AuctionId,
  lastBase0PersonId,
  type Auction,
  type Bid,
  type NexmarkEvent,
  type NexmarkOptions,
  type NexmarkSplit,
  type Person,
} from '../../src/connectors/nexmark/NexmarkGenerator.js';
import { SpillwayError } from '../../src/errors/Errors.js';
import { q0, q1, q11, q2, q3, q4, q5, q7, q8, sortRows } from '../helpers/nexmarkReference.js';

/** Every event of a bounded generator. */
function drain(options: NexmarkOptions, split?: NexmarkSplit): NexmarkEvent[] {
  const generator = new NexmarkGenerator(options, split);
  const events: NexmarkEvent[] = [];
  for (let e = generator.next(); e !== null; e = generator.next()) events.push(e);
  return events;
}

/** Every event of a bounded generator with its event number. */
function drainNumbered(options: NexmarkOptions, split?: NexmarkSplit): { number: number; event: NexmarkEvent }[] {
  const generator = new NexmarkGenerator(options, split);
  const events: { number: number; event: NexmarkEvent }[] = [];
  for (;;) {
    const number = generator.nextEventNumber;
    const event = generator.next();
    if (event === null) return events;
    events.push({ number, event });
  }
}

/** The size of an event as the reference counts it (currentSize + extra): 8 bytes a number it counts, 1 a character. */
function referenceSize(e: NexmarkEvent): number {
  switch (e.type) {
    case 'person': {
      const p = e.person;
      return 8 + p.name.length + p.emailAddress.length + p.creditCard.length + p.city.length + p.state.length + p.extra.length;
    }
    case 'auction':
      return 8 + e.auction.itemName.length + e.auction.description.length + 5 * 8 + e.auction.extra.length;
    case 'bid':
      return 4 * 8 + e.bid.extra.length;
  }
}

function mean(xs: number[]): number {
  return xs.reduce((sum, x) => sum + x, 0) / xs.length;
}

const stream = drain({ events: 50_000 });
const persons = stream.flatMap((e) => (e.type === 'person' ? [e.person] : []));
const auctions = stream.flatMap((e) => (e.type === 'auction' ? [e.auction] : []));
const bids = stream.flatMap((e) => (e.type === 'bid' ? [e.bid] : []));

describe('NexmarkGenerator', () => {
  test('one seed makes the same events twice; another seed makes other events of the same types', () => {
    expect(drain({ events: 2000, seed: 7 })).toEqual(drain({ events: 2000, seed: 7 }));
    const a = drain({ events: 2000, seed: 7 });
    const b = drain({ events: 2000, seed: 8 });
    expect(b.map((e) => e.type)).toEqual(a.map((e) => e.type));
    const same = a.filter((e, i) => JSON.stringify(e) === JSON.stringify(b[i])).length;
    expect(same).toBe(0);
  });

  test('the splits 0..n-1 of n, for n from 1 to 5, make exactly the events of one generator, each once', () => {
    const options = { events: 1003, seed: 3 };
    const whole = drain(options);
    expect(whole).toHaveLength(1003);
    for (let n = 1; n <= 5; n++) {
      const parts = Array.from({ length: n }, (_, index) => drainNumbered(options, { index, count: n }));
      parts.forEach((part, index) => expect(part.every(({ number }) => number % n === index)).toBe(true));
      const union = parts.flat().sort((x, y) => x.number - y.number);
      expect(union.map(({ number }) => number)).toEqual(whole.map((_, i) => i));
      expect(union.map(({ event }) => event)).toEqual(whole);
    }
  });

  test('every 50 event ids are a person, then 3 auctions, then 46 bids', () => {
    for (let epoch = 0; epoch < stream.length / 50; epoch++) {
      const types = stream.slice(epoch * 50, epoch * 50 + 50).map((e) => e.type);
      expect(types).toEqual(['person', 'auction', 'auction', 'auction', ...Array<string>(46).fill('bid')]);
    }
  });

  test('persons and auctions are numbered from 1000 in event-id order, as lastBase0PersonId and lastBase0AuctionId say', () => {
    expect(persons.map((p) => p.id)).toEqual(persons.map((_, i) => FIRST_PERSON_ID + i));
    expect(auctions.map((a) => a.id)).toEqual(auctions.map((_, i) => FIRST_AUCTION_ID + i));
    const misnumbered = stream.filter(
      (e, eventId) =>
        (e.type === 'person' && e.person.id !== FIRST_PERSON_ID + lastBase0PersonId(eventId)) ||
        (e.type === 'auction' && e.auction.id !== FIRST_AUCTION_ID + lastBase0AuctionId(eventId)),
    );
    expect(misnumbered).toEqual([]);
  });

  test('bids and auctions refer to persons and auctions generated before them, or at most the lead (10) past the last', () => {
    let lastPerson = -1;
    let lastAuction = -1;
    let existing = 0;
    let references = 0;
    const outOfRange: NexmarkEvent[] = [];
    const within = (id: number, first: number, last: number, lead: number): boolean => id >= first && id <= last + lead;
    for (const e of stream) {
      if (e.type === 'person') lastPerson = e.person.id;
      else if (e.type === 'auction') {
        if (!within(e.auction.seller, FIRST_PERSON_ID, lastPerson, PERSON_ID_LEAD)) outOfRange.push(e);
        lastAuction = e.auction.id;
      } else {
        const { auction, bidder } = e.bid;
        if (!within(auction, FIRST_AUCTION_ID, lastAuction, AUCTION_ID_LEAD) || !within(bidder, FIRST_PERSON_ID, lastPerson, PERSON_ID_LEAD)) outOfRange.push(e);
        references += 2;
        existing += Number(auction <= lastAuction) + Number(bidder <= lastPerson);
      }
    }
    expect(outOfRange).toEqual([]);
    // Only some of the picks that are not hot go past the last id.
    expect(existing / references).toBeGreaterThan(0.95);
  });

  test('half of the bids are for the hot auction, three quarters by the hot bidder, three quarters of the auctions by the hot seller', () => {
    let hotAuction = 0;
    let hotBidder = 0;
    let hotSeller = 0;
    stream.forEach((e, eventId) => {
      const hotPerson = Math.floor(lastBase0PersonId(eventId) / 100) * 100;
      if (e.type === 'bid') {
        hotAuction += Number(e.bid.auction - FIRST_AUCTION_ID === Math.floor(lastBase0AuctionId(eventId) / 100) * 100);
        hotBidder += Number(e.bid.bidder - FIRST_PERSON_ID === hotPerson + 1);
      } else if (e.type === 'auction') {
        hotSeller += Number(e.auction.seller - FIRST_PERSON_ID === hotPerson);
      }
    });
    expect(hotAuction / bids.length).toBeGreaterThan(0.48);
    expect(hotAuction / bids.length).toBeLessThan(0.54);
    expect(hotBidder / bids.length).toBeGreaterThan(0.73);
    expect(hotBidder / bids.length).toBeLessThan(0.78);
    expect(hotSeller / auctions.length).toBeGreaterThan(0.71);
    expect(hotSeller / auctions.length).toBeLessThan(0.8);
  });

  test('events average 200 (person), 500 (auction) and 100 (bid) bytes as the reference counts them, within 2%', () => {
    const average = (type: NexmarkEvent['type'], expected: number): void => {
      const sizes = stream.filter((e) => e.type === type).map(referenceSize);
      expect(Math.abs(mean(sizes) - expected) / expected, type).toBeLessThan(0.02);
    };
    average('person', AVG_PERSON_BYTES);
    average('auction', AVG_AUCTION_BYTES);
    average('bid', AVG_BID_BYTES);
    // The padding varies ±20% around what brings an event to its average.
    const bidExtras = bids.map((b) => b.extra.length);
    expect(Math.min(...bidExtras)).toBe(54);
    expect(Math.max(...bidExtras)).toBe(81);
  });

  test('fields take the values the reference gives them', () => {
    const NAME = /^(Peter|Paul|Luke|John|Saul|Vicky|Kate|Julie|Sarah|Deiter|Walter) (Shultz|Abrams|Spencer|White|Bartels|Walton|Smith|Jones|Noris)$/;
    const EMAIL = /^([a-z]([a-z ]{0,4}[a-z])?)?@([a-z]([a-z ]{0,2}[a-z])?)?\.com$/;
    const CITIES = ['Phoenix', 'Los Angeles', 'San Francisco', 'Boise', 'Portland', 'Bend', 'Redmond', 'Seattle', 'Kent', 'Cheyenne'];
    const STATES = ['AZ', 'CA', 'ID', 'OR', 'WA', 'WY'];
    const goodPerson = (p: Person): boolean =>
      NAME.test(p.name) && EMAIL.test(p.emailAddress) && /^\d{4} \d{4} \d{4} \d{4}$/.test(p.creditCard) && CITIES.includes(p.city) && STATES.includes(p.state) && /^[a-z]*$/.test(p.extra);
    const goodAuction = (a: Auction): boolean =>
      a.itemName.length < 20 && a.description.length < 100 && a.itemName === a.itemName.trim() && a.description === a.description.trim() &&
      a.category >= 10 && a.category <= 14 && a.reserve > a.initialBid && /^[a-z]*$/.test(a.extra);
    const URL = /^https:\/\/www\.nexmark\.com\/[a-z_]{2,4}\/[a-z_]{2,4}\/[a-z_]{2,4}\/item\.htm\?query=1(&channel_id=-?\d+)?$/;
    const goodBid = (b: Bid): boolean => /^(Google|Facebook|Baidu|Apple|channel-\d{1,4})$/.test(b.channel) && URL.test(b.url) && /^[a-z]*$/.test(b.extra);
    expect(persons.filter((p) => !goodPerson(p))).toEqual([]);
    expect(auctions.filter((a) => !goodAuction(a))).toEqual([]);
    expect(bids.filter((b) => !goodBid(b))).toEqual([]);
    // Each channel has one url, for every seed; half of the bids come through the four hot channels.
    const urls = new Map<string, string>();
    const clashes = [...bids, ...drain({ events: 5000, seed: 99 }).flatMap((e) => (e.type === 'bid' ? [e.bid] : []))].filter((b) => {
      const url = urls.get(b.channel) ?? b.url;
      urls.set(b.channel, url);
      return url !== b.url;
    });
    expect(clashes).toEqual([]);
    expect(bids.filter((b) => !b.channel.startsWith('channel-')).length / bids.length).toBeCloseTo(0.5, 1);
    expect(new Set(bids.map((b) => b.channel)).size).toBeGreaterThan(4000);
    expect(new Set(auctions.map((a) => a.category)).size).toBe(5);
  });

  test('prices are log-uniform from 100 to 100,000,000 cents', () => {
    const prices = bids.map((b) => b.price);
    expect(prices.every((p) => Number.isInteger(p) && p >= 100 && p < 100_000_000)).toBe(true);
    const logs = prices.map((p) => Math.log10(p / 100) / 6);
    expect(mean(logs)).toBeGreaterThan(0.49);
    expect(mean(logs)).toBeLessThan(0.51);
    expect(logs.filter((x) => x < 0.25).length / logs.length).toBeCloseTo(0.25, 1);
  });

  test('event n happens at baseTime + floor(floor(n × interEventDelayUs) / 1000) ms, interEventDelayUs = 10^6 / rate; nextEventTime tells it in advance', () => {
    for (const rate of [10_000, 1000, 3, 7_777]) {
      const generator = new NexmarkGenerator({ events: 3000, rate, baseTime: 5_000 });
      const interEventDelayUs = 1_000_000 / rate;
      const wrong: number[] = [];
      for (let n = 0; n < 3000; n++) {
        const expected = 5_000 + Math.floor(Math.floor(n * interEventDelayUs) / 1000);
        if (generator.nextEventTime !== expected || eventTime(generator.next() as NexmarkEvent) !== expected) wrong.push(n);
      }
      expect(wrong, `rate ${rate}`).toEqual([]);
    }
    expect(eventTime(stream[0])).toBe(DEFAULT_BASE_TIME);
    expect(eventTime(stream[49_999])).toBe(DEFAULT_BASE_TIME + 4999);
  });

  test('auctions last from 1 ms to twice the time until 100 more auctions are made, 1666 events at 10,000 events/s', () => {
    const lengths = auctions.map((a) => a.expires - a.dateTime);
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(2 * 167);
    expect(mean(lengths)).toBeGreaterThan(160);
    expect(mean(lengths)).toBeLessThan(175);
  });

  test('seek(position) resumes where a generator at that position was, for a split too', () => {
    for (const split of [{ index: 0, count: 1 }, { index: 2, count: 3 }]) {
      const all = drain({ events: 2000, seed: 5 }, split);
      const resumed = new NexmarkGenerator({ events: 2000, seed: 5 }, split);
      resumed.seek(400);
      expect(resumed.position).toBe(400);
      const rest: NexmarkEvent[] = [];
      for (let e = resumed.next(); e !== null; e = resumed.next()) rest.push(e);
      expect(rest).toEqual(all.slice(400));
      expect(resumed.position).toBe(all.length);
    }
  });

  test('a bounded generator returns its share of the events, then null every time', () => {
    const generator = new NexmarkGenerator({ events: 10 }, { index: 1, count: 3 });
    expect([generator.next(), generator.next(), generator.next()].every((e) => e !== null)).toBe(true);
    expect(generator.position).toBe(3);
    expect(generator.next()).toBeNull();
    expect(generator.next()).toBeNull();
    expect(generator.position).toBe(3);
    expect(drain({ events: 0 })).toEqual([]);
    expect(drain({ events: 2 }, { index: 4, count: 5 })).toEqual([]);
    const unbounded = new NexmarkGenerator({});
    unbounded.seek(1e12);
    expect(unbounded.next()).not.toBeNull();
  });

  test('out-of-order groups shuffle the event ids within each group, never below the watermark', () => {
    // One event a millisecond, so that a shuffle shows in the times.
    const generator = new NexmarkGenerator({ events: 1000, rate: 1000, outOfOrderGroupSize: 10 });
    const times: number[] = [];
    const early: number[] = [];
    for (let n = 0; n < 1000; n++) {
      const watermark = generator.watermark;
      const t = eventTime(generator.next() as NexmarkEvent);
      if (t < watermark) early.push(n);
      times.push(t);
    }
    expect(early).toEqual([]);
    expect(times).not.toEqual([...times].sort((a, b) => a - b));
    // The same events as in order, only their order within each group changed.
    const ordered = drain({ events: 1000, rate: 1000 });
    const shuffled = drain({ events: 1000, rate: 1000, outOfOrderGroupSize: 10 });
    for (let g = 0; g < 100; g++) {
      const key = (e: NexmarkEvent): string => JSON.stringify(e);
      expect(shuffled.slice(g * 10, g * 10 + 10).map(key).sort()).toEqual(ordered.slice(g * 10, g * 10 + 10).map(key).sort());
    }
  });

  test('bad options are refused with SPW_ERR_INVALID_PARAM', () => {
    const bad: [NexmarkOptions, NexmarkSplit | undefined][] = [
      [{ events: -1 }, undefined],
      [{ events: 1.5 }, undefined],
      [{ rate: 0 }, undefined],
      [{ rate: Infinity }, undefined],
      [{ outOfOrderGroupSize: 0 }, undefined],
      [{}, { index: 3, count: 3 }],
      [{}, { index: 0, count: 0 }],
    ];
    for (const [options, split] of bad) {
      expect(() => new NexmarkGenerator(options, split), JSON.stringify([options, split])).toThrow(SpillwayError);
      try {
        new NexmarkGenerator(options, split);
      } catch (error) {
        expect((error as SpillwayError).code).toBe('SPW_ERR_INVALID_PARAM');
      }
    }
    expect(() => new NexmarkGenerator({}).seek(-1)).toThrow(SpillwayError);
  });
});

// ---------------------------------------------------------------------------------------------

const T = 1_700_000_000_000;

function person(id: number, dateTime: number, state = 'OR'): NexmarkEvent {
  return { type: 'person', person: { id, name: `P${id}`, emailAddress: '', creditCard: '', city: `C${id}`, state, dateTime, extra: '' } };
}

function auction(id: number, seller: number, dateTime: number, expires: number, category = 10): NexmarkEvent {
  return { type: 'auction', auction: { id, itemName: '', description: '', initialBid: 1, reserve: 2, dateTime, expires, seller, category, extra: '' } };
}

function bid(auction: number, bidder: number, price: number, dateTime: number): NexmarkEvent {
  return { type: 'bid', bid: { auction, bidder, price, channel: 'Google', url: 'u', dateTime, extra: `x${dateTime}` } };
}

describe('Nexmark reference queries', () => {
  test('sortRows orders by the fields in order, numbers by value', () => {
    expect(sortRows([{ a: 10, b: 'y' }, { a: 9, b: 'z' }, { a: 10, b: 'x' }])).toEqual([{ a: 9, b: 'z' }, { a: 10, b: 'x' }, { a: 10, b: 'y' }]);
  });

  test('q0 passes every bid, q1 converts prices at 0.908, q2 keeps auctions that are multiples of 123', () => {
    const events = [bid(1230, 1, 100, T + 1), person(1, T), bid(1000, 2, 250, T)];
    expect(q0(events).map((r) => r.price)).toEqual([250, 100]);
    expect(q1(events)).toEqual([
      { auction: 1000, bidder: 2, price: 250 * 0.908, dateTime: T, extra: `x${T}` },
      { auction: 1230, bidder: 1, price: 100 * 0.908, dateTime: T + 1, extra: `x${T + 1}` },
    ]);
    expect(q2(events)).toEqual([{ auction: 1230, price: 100 }]);
  });

  test('q3 joins auctions of category 10 with sellers in OR, ID or CA, whichever arrives first', () => {
    const events = [auction(1, 7, T, T + 5), person(7, T + 1, 'ID'), person(8, T, 'WA'), auction(2, 8, T, T + 5), auction(3, 7, T, T + 5, 11)];
    expect(q3(events)).toEqual([{ name: 'P7', city: 'C7', state: 'ID', id: 1 }]);
  });

  test('q4 averages per category the highest bid of each auction made from its start to its expiry, both included', () => {
    const events = [
      auction(1, 7, T, T + 100, 10),
      auction(2, 7, T, T + 100, 10),
      auction(3, 7, T, T + 100, 11),
      bid(1, 5, 999, T - 1),
      bid(1, 5, 10, T),
      bid(1, 5, 20, T + 100),
      bid(1, 5, 999, T + 101),
      bid(2, 5, 5, T + 50),
      bid(4, 5, 5, T + 50),
    ];
    expect(q4(events)).toEqual([{ category: 10, avg: 12.5 }]);
  });

  test('q5 counts bids per auction in 10 s windows every 2 s and keeps the top auctions of each, ties and all', () => {
    const events = [bid(1, 9, 1, T + 1_000), bid(1, 9, 1, T + 3_000), bid(2, 9, 1, T + 9_000), bid(2, 9, 1, T + 10_000), bid(3, 9, 1, T + 11_000)];
    const rows = q5(events);
    const at = (start: number): number[][] => rows.filter((r) => r.start === start).map(({ auction, num }) => [auction, num]);
    expect(rows.every((r) => r.end === r.start + 10_000)).toBe(true);
    expect(at(T - 8_000)).toEqual([[1, 1]]);
    expect(at(T)).toEqual([[1, 2]]);
    expect(at(T + 2_000)).toEqual([[2, 2]]);
    expect(at(T + 10_000)).toEqual([
      [2, 1],
      [3, 1],
    ]);
    expect(at(T + 12_000)).toEqual([]);
    expect(new Set(rows.map((r) => r.start)).size).toBe(10);
  });

  test('q7 keeps, per tumbling 10 s window, every bid at its highest price', () => {
    const events = [bid(1, 1, 50, T), bid(2, 2, 50, T + 9_999), bid(3, 3, 40, T + 5), bid(4, 4, 10, T + 10_000)];
    expect(q7(events).map((r) => [r.auction, r.price])).toEqual([
      [1, 50],
      [2, 50],
      [4, 10],
    ]);
  });

  test('q8 pairs each person with each of their auctions made in the same tumbling 10 s window', () => {
    const events = [person(7, T + 9_000), auction(1, 7, T + 9_999, T + 20_000), auction(2, 7, T + 10_000, T + 20_000), auction(3, 7, T + 1, T + 5), auction(4, 8, T, T + 1)];
    expect(q8(events)).toEqual([
      { id: 7, name: 'P7', starttime: T },
      { id: 7, name: 'P7', starttime: T },
    ]);
  });

  test('q11 merges a bidder\'s bids into sessions: a bid exactly the gap after the last joins, one a millisecond later opens a new one', () => {
    const events = [bid(1, 5, 1, T + 10_000), bid(1, 5, 1, T), bid(1, 5, 1, T + 30_001), bid(1, 6, 1, T + 3)];
    expect(q11(events)).toEqual(
      sortRows([
        { bidder: 5, count: 2, start: T, end: T + 20_000 },
        { bidder: 5, count: 1, start: T + 30_001, end: T + 40_001 },
        { bidder: 6, count: 1, start: T + 3, end: T + 10_003 },
      ]),
    );
  });

  test('on a generated stream, every query has rows', () => {
    for (const query of [q0, q1, q2, q3, q4, q5, q7, q8, q11]) expect(query(stream).length, query.name).toBeGreaterThan(0);
  });
});

/**
 * A deterministic Nexmark event generator, after nexmark-flink's
 * `com.github.nexmark.flink.generator` package (github.com/nexmark/nexmark: `NexmarkGenerator`,
 * `GeneratorConfig`, `model/{Person,Auction,Bid,Strings,Price,Long}Generator`), which is Apache
 * Beam's `sdks/java/testing/nexmark/.../sources/generator` design with channels and urls on bids.
 *
 * Event ids, the type of each event (`eventId % 50`: 1 person, 3 auctions, 46 bids), the ids an
 * event refers to, field sizes, prices, auction lengths and event times follow the reference.
 * Each event depends only on (seed, eventId), as Beam seeds its Random with the event id, so a
 * split is a stride over event numbers and a restore is a seek.
 *
 * Deviations from the reference, each on purpose:
 * - our own PRNG (java.util.Random's sequence is not reproduced, its distributions are);
 * - random strings are slices of a pre-built pool of random characters (not built per event);
 * - splits stride over one timeline (split i of n has the event numbers i, i+n, ...; `rate` is the
 *   rate of all splits together), where the reference gives each split a range of event ids and
 *   its own timeline;
 * - a bidder id is offset by FIRST_PERSON_ID once: nexmark-flink adds it twice (its issue #30).
 */
import { SpillwayError } from '../../errors/Errors.js';
import type { Auction, Bid, NexmarkEvent, Person } from './NexmarkModel.js';

export { eventTime } from './NexmarkModel.js';
export type { Auction, Bid, NexmarkEvent, Person } from './NexmarkModel.js';

/** Event time of event 0 when none is given (epoch ms): fixed, so runs repeat exactly. */
export const DEFAULT_BASE_TIME = 1_700_000_000_000;
/** Events per second of event time, over all splits, when none is given (the reference's firstEventRate). */
export const DEFAULT_RATE = 10_000;

/** Ids start here so that queries find matches even on small runs (GeneratorConfig). */
export const FIRST_PERSON_ID = 1000;
export const FIRST_AUCTION_ID = 1000;
export const FIRST_CATEGORY_ID = 10;
export const NUM_CATEGORIES = 5;

/** Of every 50 consecutive event ids, the first is a person, the next 3 auctions, the rest bids. */
export const PERSON_PROPORTION = 1;
export const AUCTION_PROPORTION = 3;
export const BID_PROPORTION = 46;
export const TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;

/** Average sizes in bytes, as the reference counts them (8 a number, 1 a character). */
export const AVG_PERSON_BYTES = 200;
export const AVG_AUCTION_BYTES = 500;
export const AVG_BID_BYTES = 100;

/** Persons and auctions a new auction or bid picks from (NexmarkConfiguration's defaults). */
export const NUM_ACTIVE_PEOPLE = 1000;
export const NUM_IN_FLIGHT_AUCTIONS = 100;
/** Ids this far past the last generated one may be picked, as if events had swapped in time. */
export const PERSON_ID_LEAD = 10;
export const AUCTION_ID_LEAD = 10;

/** 1 - 1/ratio of bids go to a hot auction, of bids come from a hot bidder, of auctions from a hot seller. */
const HOT_AUCTION_RATIO = 2;
const HOT_BIDDERS_RATIO = 4;
const HOT_SELLERS_RATIO = 4;
/** The hot one is the first (the second for bidders) of the last batch of this many ids. */
const HOT_ID_BATCH = 100;

/** Half of the bids come through one of the hot channels, the rest through one of CHANNELS_NUMBER. */
const HOT_CHANNELS_RATIO = 2;
const CHANNELS_NUMBER = 10_000;
const HOT_CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];

const US_STATES = ['AZ', 'CA', 'ID', 'OR', 'WA', 'WY'];
const US_CITIES = ['Phoenix', 'Los Angeles', 'San Francisco', 'Boise', 'Portland', 'Bend', 'Redmond', 'Seattle', 'Kent', 'Cheyenne'];
const FIRST_NAMES = ['Peter', 'Paul', 'Luke', 'John', 'Saul', 'Vicky', 'Kate', 'Julie', 'Sarah', 'Deiter', 'Walter'];
const LAST_NAMES = ['Shultz', 'Abrams', 'Spencer', 'White', 'Bartels', 'Walton', 'Smith', 'Jones', 'Noris'];
/** Every "first last" pair, so that a name costs one draw and no concatenation. */
const NAMES = FIRST_NAMES.flatMap((first) => LAST_NAMES.map((last) => `${first} ${last}`));

/** StringsGenerator's MIN_STRING_LENGTH. */
const MIN_STRING_LENGTH = 3;
/** Out-of-order groups are shuffled by this multiplier (GeneratorConfig.nextAdjustedEventNumber). */
const OUT_OF_ORDER_MULTIPLIER = 953;

export interface NexmarkOptions {
  /** Events over all splits; undefined for an unbounded stream (0 means none). */
  events?: number;
  /** Events per second of event time, over all splits; default DEFAULT_RATE. */
  rate?: number;
  /** Seeds every event; default 0. */
  seed?: number;
  /** Event time of event 0, epoch ms; default DEFAULT_BASE_TIME. */
  baseTime?: number;
  /**
   * Events of each group of this many consecutive event numbers come in a shuffled order (the
   * reference's outOfOrderGroupSize); default 1, in order.
   */
  outOfOrderGroupSize?: number;
}

/** Which share of the stream a generator makes: the event numbers `index, index + count, ...`. */
export interface NexmarkSplit {
  index: number;
  count: number;
}

// ---------------------------------------------------------------------------------------------
// Ids, as functions of the event id (PersonGenerator, AuctionGenerator).

/** The last person id generated up to `eventId` (base 0): `eventId`'s own if it is a person. */
export function lastBase0PersonId(eventId: number): number {
  const epoch = Math.floor(eventId / TOTAL_PROPORTION);
  let offset = eventId % TOTAL_PROPORTION;
  if (offset >= PERSON_PROPORTION) offset = PERSON_PROPORTION - 1;
  return epoch * PERSON_PROPORTION + offset;
}

/** The last auction id generated up to `eventId` (base 0; -1 before the first): `eventId`'s own if it is an auction. */
export function lastBase0AuctionId(eventId: number): number {
  let epoch = Math.floor(eventId / TOTAL_PROPORTION);
  let offset = eventId % TOTAL_PROPORTION;
  if (offset < PERSON_PROPORTION) {
    // A person: the last auction of the previous epoch.
    epoch--;
    offset = AUCTION_PROPORTION - 1;
  } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
    // A bid: the last auction of this epoch.
    offset = AUCTION_PROPORTION - 1;
  } else {
    offset -= PERSON_PROPORTION;
  }
  return epoch * AUCTION_PROPORTION + offset;
}

// ---------------------------------------------------------------------------------------------
// Randomness.

/**
 * murmur3's 32-bit finalizer: a bijection that mixes every input bit into every output bit.
 * Signed 32-bit in and out, as every word of the PRNG: V8 keeps those unboxed (small integers),
 * where an unsigned one past 2^31 would be a heap number at each call.
 */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

const TWO_32 = 4294967296;

/**
 * A small PRNG re-seeded for each event: a Weyl sequence `a` xor a key `k`, through fmix32.
 * (a, k) is injective in the event id for a seed, so no two events share a stream.
 */
class EventRandom {
  private a = 0;
  private k = 0;

  constructor(private readonly seedLo: number, private readonly seedHi: number) {}

  /** Starts the stream of one event. */
  reset(eventId: number): void {
    const lo = eventId | 0;
    const hi = Math.floor(eventId / TWO_32) | 0;
    this.a = fmix32(lo ^ this.seedLo);
    this.k = fmix32(fmix32((lo + this.seedHi) | 0) ^ hi);
  }

  /** 32 random bits, as a signed 32-bit integer. */
  nextBits(): number {
    this.a = (this.a + 0x9e3779b9) | 0;
    return fmix32(this.a ^ this.k);
  }

  /** Uniform integer in [0, bound), bound ≥ 1 (java.util.Random.nextInt's contract). */
  nextInt(bound: number): number {
    return Math.floor(((this.nextBits() >>> 0) / TWO_32) * bound);
  }
}

/** Seeds a one-off stream, for module-level tables. */
function tableRandom(seed: number): EventRandom {
  const random = new EventRandom(fmix32(0x243f6a88), fmix32(0x85a308d3));
  random.reset(seed);
  return random;
}

// ---------------------------------------------------------------------------------------------
// Tables, made once per process by the first generator (not on import: they take tens of ms).

/**
 * Slices of random text start anywhere in the first POOL_SIZE characters. A MiB, so that the
 * extras of one buffer of events rarely overlap and a compressor finds no more in them than in
 * the reference's.
 */
const POOL_SIZE = 1 << 20;
/** Longer than any string sliced (an auction's extra is under 500). */
const POOL_TAIL = 1024;

/** Letters only: nextExactString's characters. */
let LETTERS = '';
/** Letters with a space one time in 13: nextString's characters. */
let WORDS = '';
/** '0000' to '9999'. */
let FOUR_DIGITS: string[] = [];
/** 10^(6x) for x the top 11, the middle 11 and the low 10 bits of a 32-bit fraction. */
let PRICE_HIGH = new Float64Array(0);
let PRICE_MID = new Float64Array(0);
let PRICE_LOW = new Float64Array(0);
/** The url of each hot channel (the reference's HOT_URLS). */
let HOT_URLS: string[] = [];
/** Cold channels' names and urls, filled as each is first drawn (the reference's CHANNEL_URL_CACHE). */
const channelNames: string[] = new Array<string>(CHANNELS_NUMBER);
const channelUrls: string[] = new Array<string>(CHANNELS_NUMBER);

function buildTables(): void {
  if (LETTERS !== '') return;
  LETTERS = randomText(tableRandom(1), POOL_SIZE + POOL_TAIL, 0, 0);
  WORDS = randomText(tableRandom(2), POOL_SIZE + POOL_TAIL, 0x20, 13);
  FOUR_DIGITS = Array.from({ length: 10_000 }, (_, i) => String(i).padStart(4, '0'));
  PRICE_HIGH = Float64Array.from({ length: 1 << 11 }, (_, i) => Math.pow(10, (6 * i) / 2 ** 11));
  PRICE_MID = Float64Array.from({ length: 1 << 11 }, (_, i) => Math.pow(10, (6 * i) / 2 ** 22));
  PRICE_LOW = Float64Array.from({ length: 1 << 10 }, (_, i) => Math.pow(10, (6 * i) / 2 ** 32));
  HOT_URLS = HOT_CHANNELS.map((_, i) => baseUrl(tableRandom(-1 - i)));
}

/** `length` characters, each a letter a-z, or with probability 1/`specialEvery` the `special` one. */
function randomText(random: EventRandom, length: number, special: number, specialEvery: number): string {
  const bytes = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) {
    bytes[i] = specialEvery > 0 && random.nextInt(specialEvery) === 0 ? special : 0x61 + random.nextInt(26);
  }
  return bytes.toString('latin1');
}

// ---------------------------------------------------------------------------------------------
// Strings (StringsGenerator) as slices of the pools, and prices (PriceGenerator).

/** A string of 3 to `maxLength - 1` characters, trimmed of spaces at either end (nextString). */
function nextString(random: EventRandom, maxLength: number): string {
  const length = MIN_STRING_LENGTH + random.nextInt(maxLength - MIN_STRING_LENGTH);
  const at = random.nextInt(POOL_SIZE);
  return WORDS.slice(at, at + length).trim();
}

/** Letters that bring `currentSize` to `averageSize` on average, ±20% (nextExtra). */
function nextExtra(random: EventRandom, currentSize: number, averageSize: number): string {
  if (currentSize > averageSize) return '';
  const wanted = averageSize - currentSize;
  const delta = Math.round(wanted * 0.2);
  const length = wanted - delta + (delta === 0 ? 0 : random.nextInt(2 * delta));
  const at = random.nextInt(POOL_SIZE);
  return LETTERS.slice(at, at + length);
}

/**
 * A price in cents, log-uniform from $1 to $1,000,000: round(10^(6u) * 100) for u uniform in
 * [0, 1) (PriceGenerator), u in 32 bits and 10^(6u) a product of three table entries, as
 * Math.pow costs a third of a bid.
 */
function nextPrice(random: EventRandom): number {
  const u = random.nextBits() >>> 0;
  return Math.round(PRICE_HIGH[u >>> 21] * PRICE_MID[(u >>> 10) & 0x7ff] * PRICE_LOW[u & 0x3ff] * 100);
}

// ---------------------------------------------------------------------------------------------
// Channels and urls of bids (BidGenerator): the reference draws them from an unseeded Random
// once per process; here each is a function of its channel number alone.

/** "https://www.nexmark.com/" and three random path parts with '_' for spaces (getBaseUrl). */
function baseUrl(random: EventRandom): string {
  const part = (): string => randomText(random, MIN_STRING_LENGTH + random.nextInt(5 - MIN_STRING_LENGTH), 0x5f, 13);
  return `https://www.nexmark.com/${part()}/${part()}/${part()}/item.htm?query=1`;
}

/** Java's Math.abs(Integer.reverse(n)), MIN_VALUE staying negative as in Java. */
function javaAbsReverse(n: number): number {
  let reversed = 0;
  for (let i = 0; i < 32; i++) reversed = (reversed << 1) | ((n >>> i) & 1);
  return reversed === -2147483648 ? reversed : Math.abs(reversed);
}

/** Fills the cache entry of channel `n` the first time it is drawn. */
function cacheChannel(n: number): void {
  const random = tableRandom(0x10000 + n);
  const url = baseUrl(random);
  channelNames[n] = `channel-${n}`;
  channelUrls[n] = random.nextInt(10) > 0 ? `${url}&channel_id=${javaAbsReverse(n)}` : url;
}

// ---------------------------------------------------------------------------------------------

function checkInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new SpillwayError('SPW_ERR_INVALID_PARAM', `nexmark: ${name} must be an integer ≥ ${min}, not ${value}`);
  }
}

/**
 * Generates one split of the Nexmark stream, deterministically: the events of a (seed, split)
 * are the same on every run, and the splits `{index: 0..count-1, count}` of one set of options
 * together make exactly the events of `{index: 0, count: 1}`, each once.
 *
 * Not thread-safe. Cheap to make, but for the first of a process, which builds the shared tables
 * (random text pools, price tables: about 50 ms).
 */
export class NexmarkGenerator {
  private readonly index: number;
  private readonly stride: number;
  /** Events this split makes in all: Infinity when unbounded. */
  private readonly share: number;
  private readonly baseTime: number;
  private readonly interEventDelayUs: number;
  private readonly groupSize: number;
  /** Events between an auction and the one NUM_IN_FLIGHT_AUCTIONS auctions later. */
  private readonly eventsForInFlightAuctions: number;
  private readonly random: EventRandom;
  private emitted = 0;

  constructor(options: NexmarkOptions, split: NexmarkSplit = { index: 0, count: 1 }) {
    const { events, rate = DEFAULT_RATE, seed = 0, baseTime = DEFAULT_BASE_TIME, outOfOrderGroupSize = 1 } = options;
    checkInteger('split.count', split.count, 1);
    checkInteger('split.index', split.index, 0);
    if (split.index >= split.count) {
      throw new SpillwayError('SPW_ERR_INVALID_PARAM', `nexmark: split.index ${split.index} is not below split.count ${split.count}`);
    }
    if (events !== undefined) checkInteger('events', events, 0);
    if (!(rate > 0) || !Number.isFinite(rate)) throw new SpillwayError('SPW_ERR_INVALID_PARAM', `nexmark: rate must be a positive number, not ${rate}`);
    checkInteger('seed', seed, Number.MIN_SAFE_INTEGER);
    checkInteger('baseTime', baseTime, Number.MIN_SAFE_INTEGER);
    checkInteger('outOfOrderGroupSize', outOfOrderGroupSize, 1);

    this.index = split.index;
    this.stride = split.count;
    this.share = events === undefined ? Infinity : Math.max(0, Math.ceil((events - split.index) / split.count));
    this.baseTime = baseTime;
    this.interEventDelayUs = 1_000_000 / rate;
    this.groupSize = outOfOrderGroupSize;
    this.eventsForInFlightAuctions = Math.floor((NUM_IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION) / AUCTION_PROPORTION);
    const seedLo = seed | 0;
    const seedHi = Math.floor(seed / TWO_32) | 0;
    this.random = new EventRandom(fmix32(seedLo ^ 0x9e3779b9), fmix32(seedHi ^ fmix32(seedLo)));
    buildTables();
  }

  /** The next event of this split, or null once its share of `events` is done. */
  next(): NexmarkEvent | null {
    if (this.emitted >= this.share) return null;
    const eventId = this.adjusted(this.index + this.emitted * this.stride);
    this.emitted++;
    const timestamp = this.timestampForEvent(eventId);
    this.random.reset(eventId);
    const rem = eventId % TOTAL_PROPORTION;
    if (rem < PERSON_PROPORTION) return { type: 'person', person: this.person(eventId, timestamp) };
    if (rem < PERSON_PROPORTION + AUCTION_PROPORTION) return { type: 'auction', auction: this.auction(eventId, timestamp) };
    return { type: 'bid', bid: this.bid(eventId, timestamp) };
  }

  /** Event time (epoch ms) of the event next() will return (or would, past the share). */
  get nextEventTime(): number {
    return this.timestampForEvent(this.adjusted(this.nextEventNumber));
  }

  /**
   * A watermark: no event next() returns from now on has an earlier event time. The same as
   * nextEventTime unless outOfOrderGroupSize > 1 (the reference's NextEvent.watermark).
   */
  get watermark(): number {
    const n = this.nextEventNumber;
    return this.timestampForEvent(n - (n % this.groupSize));
  }

  /** The event number (place in the unsplit stream) of the event next() will return. */
  get nextEventNumber(): number {
    return this.index + this.emitted * this.stride;
  }

  /** How many events this split has returned: its position, which a checkpoint will store. */
  get position(): number {
    return this.emitted;
  }

  /** Resumes at a position (for restore): next() then returns what it returned after `position` events. */
  seek(position: number): void {
    checkInteger('position', position, 0);
    this.emitted = position;
  }

  /** The event id of event number `n`: itself, or shuffled within its out-of-order group. */
  private adjusted(n: number): number {
    const size = this.groupSize;
    if (size === 1) return n;
    const offset = n % size;
    return n - offset + ((offset * OUT_OF_ORDER_MULTIPLIER) % size);
  }

  /** GeneratorConfig.timestampForEvent: whole microseconds, then whole milliseconds. */
  private timestampForEvent(eventNumber: number): number {
    return this.baseTime + Math.floor(Math.floor(eventNumber * this.interEventDelayUs) / 1000);
  }

  /** A person among the active ones or a few ahead (PersonGenerator.nextBase0PersonId). */
  private nextBase0PersonId(eventId: number): number {
    const numPeople = lastBase0PersonId(eventId) + 1;
    const activePeople = Math.min(numPeople, NUM_ACTIVE_PEOPLE);
    return numPeople - activePeople + this.random.nextInt(activePeople + PERSON_ID_LEAD);
  }

  /** An auction likely still in flight, or a few ahead (AuctionGenerator.nextBase0AuctionId). */
  private nextBase0AuctionId(eventId: number): number {
    const maxAuction = lastBase0AuctionId(eventId);
    const minAuction = Math.max(maxAuction - NUM_IN_FLIGHT_AUCTIONS, 0);
    return minAuction + this.random.nextInt(maxAuction - minAuction + 1 + AUCTION_ID_LEAD);
  }

  private person(eventId: number, timestamp: number): Person {
    const random = this.random;
    const name = NAMES[random.nextInt(NAMES.length)];
    const emailAddress = `${nextString(random, 7)}@${nextString(random, 5)}.com`;
    const creditCard = this.creditCard();
    const city = US_CITIES[random.nextInt(US_CITIES.length)];
    const state = US_STATES[random.nextInt(US_STATES.length)];
    const size = 8 + name.length + emailAddress.length + creditCard.length + city.length + state.length;
    const extra = nextExtra(random, size, AVG_PERSON_BYTES);
    return { id: lastBase0PersonId(eventId) + FIRST_PERSON_ID, name, emailAddress, creditCard, city, state, dateTime: timestamp, extra };
  }

  /** Four groups of four digits. */
  private creditCard(): string {
    const r = this.random;
    return `${FOUR_DIGITS[r.nextInt(10000)]} ${FOUR_DIGITS[r.nextInt(10000)]} ${FOUR_DIGITS[r.nextInt(10000)]} ${FOUR_DIGITS[r.nextInt(10000)]}`;
  }

  private auction(eventId: number, timestamp: number): Auction {
    const random = this.random;
    // Hot sellers: the first of the last batch of HOT_ID_BATCH people.
    const seller =
      random.nextInt(HOT_SELLERS_RATIO) > 0
        ? Math.floor(lastBase0PersonId(eventId) / HOT_ID_BATCH) * HOT_ID_BATCH
        : this.nextBase0PersonId(eventId);
    const category = FIRST_CATEGORY_ID + random.nextInt(NUM_CATEGORIES);
    const initialBid = nextPrice(random);
    const expires = timestamp + this.auctionLengthMs(eventId, timestamp);
    const itemName = nextString(random, 20);
    const description = nextString(random, 100);
    const reserve = initialBid + nextPrice(random);
    const extra = nextExtra(random, 8 + itemName.length + description.length + 8 + 8 + 8 + 8 + 8, AVG_AUCTION_BYTES);
    return {
      id: lastBase0AuctionId(eventId) + FIRST_AUCTION_ID,
      itemName,
      description,
      initialBid,
      reserve,
      dateTime: timestamp,
      expires,
      seller: seller + FIRST_PERSON_ID,
      category,
      extra,
    };
  }

  /**
   * 1 ms to twice the time until NUM_IN_FLIGHT_AUCTIONS more auctions are made, uniformly
   * (AuctionGenerator.nextAuctionLengthMs): about that many are open at any time.
   */
  private auctionLengthMs(eventId: number, timestamp: number): number {
    const horizonMs = this.timestampForEvent(eventId + this.eventsForInFlightAuctions) - timestamp;
    return 1 + this.random.nextInt(Math.max(horizonMs * 2, 1));
  }

  private bid(eventId: number, timestamp: number): Bid {
    const random = this.random;
    // Hot auctions: the first of the last batch of HOT_ID_BATCH auctions.
    const auction =
      random.nextInt(HOT_AUCTION_RATIO) > 0
        ? Math.floor(lastBase0AuctionId(eventId) / HOT_ID_BATCH) * HOT_ID_BATCH
        : this.nextBase0AuctionId(eventId);
    // Hot bidders: the second of the last batch, so that hot bidders are not hot sellers.
    const bidder =
      random.nextInt(HOT_BIDDERS_RATIO) > 0
        ? Math.floor(lastBase0PersonId(eventId) / HOT_ID_BATCH) * HOT_ID_BATCH + 1
        : this.nextBase0PersonId(eventId);
    const price = nextPrice(random);
    let channel: string;
    let url: string;
    if (random.nextInt(HOT_CHANNELS_RATIO) > 0) {
      const i = random.nextInt(HOT_CHANNELS.length);
      channel = HOT_CHANNELS[i];
      url = HOT_URLS[i];
    } else {
      const n = random.nextInt(CHANNELS_NUMBER);
      if (channelNames[n] === undefined) cacheChannel(n);
      channel = channelNames[n];
      url = channelUrls[n];
    }
    // The reference counts the four numbers, not the channel and url.
    const extra = nextExtra(random, 8 + 8 + 8 + 8, AVG_BID_BYTES);
    return { auction: auction + FIRST_AUCTION_ID, bidder: bidder + FIRST_PERSON_ID, price, channel, url, dateTime: timestamp, extra };
  }
}

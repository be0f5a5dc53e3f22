/**
 * The Nexmark events, with the field names of nexmark-flink's model
 * (github.com/nexmark/nexmark, `nexmark-flink/.../flink/model/{Person,Auction,Bid}.java`).
 *
 * Plain objects, not classes: they cross threads and the network as msgpackr maps.
 * Ids, prices and categories are integers; `dateTime` and `expires` are epoch milliseconds
 * (the reference's `Instant`s).
 */

/** A new person registers (in the reference, a 'new person' event). */
export interface Person {
  /** From 1000 up, one per person event, in event-id order. */
  id: number;
  name: string;
  emailAddress: string;
  creditCard: string;
  city: string;
  state: string;
  dateTime: number;
  /** Padding that brings the event to its average size (200 bytes as the reference counts them). */
  extra: string;
}

/** A person opens an auction. */
export interface Auction {
  /** From 1000 up, one per auction event, in event-id order. */
  id: number;
  itemName: string;
  description: string;
  /** In cents, as every price. */
  initialBid: number;
  reserve: number;
  dateTime: number;
  /** When the auction closes: after `dateTime`, never at it. */
  expires: number;
  /** A `Person.id`. */
  seller: number;
  /** From 10 to 14. */
  category: number;
  /** Padding to an average of 500 bytes as the reference counts them. */
  extra: string;
}

/** A person bids in an auction. */
export interface Bid {
  /** An `Auction.id`. */
  auction: number;
  /** A `Person.id`. */
  bidder: number;
  /** In cents. */
  price: number;
  channel: string;
  url: string;
  dateTime: number;
  /** Padding to an average of 100 bytes as the reference counts them. */
  extra: string;
}

/** One event of the stream: a person, an auction or a bid, told apart by `type`. */
export type NexmarkEvent = { type: 'person'; person: Person } | { type: 'auction'; auction: Auction } | { type: 'bid'; bid: Bid };

/** The event time of an event: the `dateTime` of whichever it holds. */
export function eventTime(e: NexmarkEvent): number {
  switch (e.type) {
    case 'bid':
      return e.bid.dateTime;
    case 'auction':
      return e.auction.dateTime;
    case 'person':
      return e.person.dateTime;
  }
}

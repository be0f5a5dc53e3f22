import { bucketOf, stableHash } from '../../../keys/StableHash.js';
import { SpillwayError } from '../../../errors/Errors.js';
import { naturalOrder, type KeyComparator } from '../../../keys/KeyOrder.js';

/** Picks the channel (subpartition) of each record; a broadcast selector sends every record to all. */
export interface ChannelSelector<T> {
  readonly isBroadcast: boolean;
  /** Fixes the number of channels before the first record. */
  setup(numberOfChannels: number): void;
  selectChannel(record: T): number;
}

export type KeySelector<T> = (record: T) => unknown;

export const DEFAULT_MAX_PARALLELISM = 128;
/** The most key groups a job may have, as Flink's upper bound of max parallelism. */
export const MAX_KEY_GROUPS = 32768;

/** One-to-one: every record to the single consumer. */
export class ForwardSelector<T> implements ChannelSelector<T> {
  readonly isBroadcast = false;

  setup(numberOfChannels: number): void {
    if (numberOfChannels !== 1) throw new SpillwayError('SPW_ERR_INTERNAL', `forward needs exactly 1 channel, not ${numberOfChannels}`);
  }

  selectChannel(): number {
    return 0;
  }
}

/** Round-robin, starting at a given channel so that parallel producers do not all start at 0. */
export class RebalanceSelector<T> implements ChannelSelector<T> {
  readonly isBroadcast = false;
  private n = 1;
  private next: number;

  constructor(start = 0) {
    if (!Number.isInteger(start)) throw new SpillwayError('SPW_ERR_INTERNAL', `rebalance start must be an integer, not ${start}`);
    this.next = start;
  }

  setup(numberOfChannels: number): void {
    checkChannels(numberOfChannels);
    this.n = numberOfChannels;
    // Any integer start, negative ones too, names a channel.
    this.next = ((this.next % numberOfChannels) + numberOfChannels) % numberOfChannels;
  }

  selectChannel(): number {
    const channel = this.next;
    this.next = channel + 1 === this.n ? 0 : channel + 1;
    return channel;
  }
}

/**
 * Flink's key groups: keyGroup = stableHash(key) mod maxParallelism, and channel =
 * floor(keyGroup * n / maxParallelism). A key group never splits, so rescaling moves
 * whole key groups and keeps every key together.
 */
export class KeyGroupSelector<T> implements ChannelSelector<T> {
  readonly isBroadcast = false;
  /** The channel of each key group: a look-up, where the division by max parallelism is a float one. */
  private channels = new Int32Array(0);

  constructor(
    private readonly key: KeySelector<T>,
    readonly maxParallelism = DEFAULT_MAX_PARALLELISM,
  ) {
    if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > MAX_KEY_GROUPS) {
      throw new SpillwayError('SPW_ERR_INVALID_JOB', `max parallelism must be an integer from 1 to ${MAX_KEY_GROUPS}, not ${maxParallelism}`);
    }
  }

  setup(numberOfChannels: number): void {
    checkChannels(numberOfChannels);
    if (numberOfChannels > this.maxParallelism) {
      throw new SpillwayError('SPW_ERR_INVALID_JOB', `${numberOfChannels} channels exceed max parallelism ${this.maxParallelism}`);
    }
    this.channels = Int32Array.from({ length: this.maxParallelism }, (_, group) => channelOfKeyGroup(group, numberOfChannels, this.maxParallelism));
  }

  selectChannel(record: T): number {
    return this.channels[keyGroupOf(this.key(record), this.maxParallelism)];
  }
}

export function keyGroupOf(key: unknown, maxParallelism = DEFAULT_MAX_PARALLELISM): number {
  return bucketOf(stableHash(key), maxParallelism);
}

export function channelForKey(key: unknown, n: number, maxParallelism = DEFAULT_MAX_PARALLELISM): number {
  return channelOfKeyGroup(keyGroupOf(key, maxParallelism), n, maxParallelism);
}

function channelOfKeyGroup(group: number, n: number, maxParallelism: number): number {
  return Math.floor((group * n) / maxParallelism);
}

/** n-1 sorted boundaries split the key space into n ranges: channel i takes keys below boundary i. */
export class RangeSelector<T> implements ChannelSelector<T> {
  readonly isBroadcast = false;

  constructor(
    private readonly key: KeySelector<T>,
    private readonly boundaries: readonly unknown[],
    private readonly compare: KeyComparator = naturalOrder,
  ) {
    for (let i = 1; i < boundaries.length; i++) {
      if (compare(boundaries[i - 1], boundaries[i]) > 0) throw new SpillwayError('SPW_ERR_INVALID_JOB', 'range boundaries are not sorted');
    }
  }

  setup(numberOfChannels: number): void {
    checkChannels(numberOfChannels);
    if (this.boundaries.length !== numberOfChannels - 1) {
      throw new SpillwayError('SPW_ERR_INVALID_JOB', `${numberOfChannels} channels need ${numberOfChannels - 1} boundaries, not ${this.boundaries.length}`);
    }
  }

  selectChannel(record: T): number {
    const key = this.key(record);
    let lo = 0;
    let hi = this.boundaries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compare(key, this.boundaries[mid]) < 0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

/** Every record to every channel. */
export class BroadcastSelector<T> implements ChannelSelector<T> {
  readonly isBroadcast = true;

  setup(numberOfChannels: number): void {
    checkChannels(numberOfChannels);
  }

  selectChannel(): number {
    throw new SpillwayError('SPW_ERR_INTERNAL', 'a broadcast selector selects all channels');
  }
}

/** A user function of (record, numberOfChannels); its answer is checked. */
export class CustomSelector<T> implements ChannelSelector<T> {
  readonly isBroadcast = false;
  private n = 1;

  constructor(private readonly select: (record: T, numberOfChannels: number) => number) {}

  setup(numberOfChannels: number): void {
    checkChannels(numberOfChannels);
    this.n = numberOfChannels;
  }

  selectChannel(record: T): number {
    const channel = this.select(record, this.n);
    if (!Number.isInteger(channel) || channel < 0 || channel >= this.n) {
      throw new SpillwayError('SPW_ERR_USER_CODE', `custom selector chose channel ${channel} of ${this.n}`);
    }
    return channel;
  }
}

function checkChannels(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new SpillwayError('SPW_ERR_INTERNAL', `number of channels must be a positive integer, not ${n}`);
}

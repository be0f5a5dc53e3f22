import { performance } from 'node:perf_hooks';
import { log } from '../Logger.js';
import type { Fence } from './Fence.js';
import type { LeaderInfo } from './LeaderInfo.js';

/** --ha-renew-interval: how often the leader renews its lease, and standbys look at it. */
export const DEFAULT_RENEW_INTERVAL_MS = 500;
/** --ha-lease: how long a lease lasts unless renewed. */
export const DEFAULT_LEASE_MS = 3000;
/**
 * The part of its lease a leader counts on: the rest covers clocks that run at slightly
 * different rates (a standby measures the lease on its own clock, from when it saw the
 * row change, which is after the leader sent the renewal that changed it).
 */
const LEASE_SHARE = 0.9;
/**
 * Renew intervals a standby goes without seeing the leader renew before it sends clients
 * to nobody (503, try again) rather than to a leader that is likely gone.
 */
const RENEWALS_MISSED = 3;

/** The lease row of a cluster: who holds it, its epoch, and a version each renewal bumps. */
export interface LeaseRow extends LeaderInfo {
  holder: string;
  version: number;
  /** Its holder gave it up (it stopped): a standby takes it at once. */
  released: boolean;
}

/** Where the lease is kept (a row per cluster); each call one statement. */
export interface LeaseStore {
  read(): Promise<LeaseRow | undefined>;
  /** Takes the lease at the next epoch if the row is still `seen` (absent: no row yet); the new row, or undefined if another changed it first. */
  take(holder: string, url: string, seen: Pick<LeaseRow, 'epoch' | 'version'> | undefined): Promise<LeaseRow | undefined>;
  /** Bumps the version if `holder` still holds the lease at `epoch`; false if not. */
  renew(holder: string, epoch: number): Promise<boolean>;
  /** Gives the lease up, if still held. */
  release(holder: string, epoch: number): Promise<void>;
}

/** What a JobManager is told of its own leadership. */
export interface LeadershipListener {
  /** It leads from now, at `epoch`. */
  granted(epoch: number): void;
  /** It leads no more (its lease ended on its own clock, or another took it). */
  revoked(): void;
}

export interface ElectionOptions {
  /** This contender's unique id and the URL others reach it at. */
  holder: string;
  url: string;
  renewIntervalMs?: number;
  leaseMs?: number;
}

/**
 * Leader election on a lease with a fencing epoch. The leader bumps the lease row's
 * version every renew interval and leads, on its own monotonic clock, until a lease
 * after it sent the last renewal that succeeded: past that it steps down at once,
 * told by nobody. A standby reads the row every interval and takes it (the epoch
 * incremented, compare-and-set on the version it saw) once the row has not changed for
 * a whole lease on the standby's own clock. Neither reads a wall clock, the database's
 * included: a clock that jumps or a database that answers slowly cannot make two
 * leaders, as the standby's lease starts after the leader's.
 */
export class LeaderElection {
  private listener: LeadershipListener | null = null;
  private timer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  private busy = false;
  private closed = false;
  private seen: { row: LeaseRow; at: number } | null = null;
  private last: LeaseRow | undefined;
  readonly renewIntervalMs: number;
  readonly leaseMs: number;

  constructor(
    private readonly store: LeaseStore,
    readonly fence: Fence,
    private readonly options: ElectionOptions,
  ) {
    this.renewIntervalMs = options.renewIntervalMs ?? DEFAULT_RENEW_INTERVAL_MS;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  }

  /** Starts contending. */
  start(listener: LeadershipListener): void {
    this.listener = listener;
    this.timer = setInterval(() => void this.tick(), this.renewIntervalMs);
    this.timer.unref();
    void this.tick();
  }

  /** The leader as last seen in the store (this JobManager itself while it leads). */
  get leader(): LeaderInfo | undefined {
    const row = this.last;
    if (row === undefined || row.released) return undefined;
    // A row unchanged for a lease is of a leader that is gone: nobody leads until one takes it.
    if (!this.fence.leads && this.seen !== null && performance.now() - this.seen.at >= this.leaseMs) return undefined;
    return { url: row.url, epoch: row.epoch, since: row.since };
  }

  /** The leader to send clients to: as `leader`, but a standby that has not seen it renew for a few intervals knows none. */
  get liveLeader(): LeaderInfo | undefined {
    const leader = this.leader;
    if (leader === undefined || this.fence.leads || this.seen === null) return leader;
    return performance.now() - this.seen.at < this.renewIntervalMs * RENEWALS_MISSED ? leader : undefined;
  }

  /** Stops contending; a leader gives its lease up, so that a standby takes over at once. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    const leading = this.fence.leads;
    this.revoke();
    if (leading) await this.store.release(this.options.holder, this.fence.epoch).catch(() => undefined);
  }

  private async tick(): Promise<void> {
    if (this.busy || this.closed) return;
    this.busy = true;
    try {
      if (this.fence.leads) await this.renew();
      else await this.contend();
    } catch (error) {
      // The store is down or slow: a leader goes on until its deadline, a standby tries again.
      log.debug({ error: (error as Error).message }, 'leader election: the store did not answer');
    } finally {
      this.busy = false;
    }
  }

  private async renew(): Promise<void> {
    const epoch = this.fence.epoch;
    const sent = performance.now();
    const renewed = await this.store.renew(this.options.holder, epoch);
    if (this.closed || this.fence.epoch !== epoch || !this.fence.leads) return;
    if (!renewed) {
      log.warn({ epoch }, 'leader election: another JobManager took the lease; stepping down');
      this.revoke();
      return;
    }
    this.hold(epoch, sent);
  }

  private async contend(): Promise<void> {
    // Its lease ran out before its deadline timer told it (a process paused, a slow loop): it steps down first.
    if (this.deadlineTimer !== null) this.revoke();
    const row = await this.store.read();
    this.last = row;
    const now = performance.now();
    if (row !== undefined && !row.released && row.holder !== this.options.holder) {
      const same = this.seen !== null && this.seen.row.epoch === row.epoch && this.seen.row.version === row.version;
      if (!same) this.seen = { row, at: now };
      if (now - this.seen!.at < this.leaseMs) return;
    }
    const sent = performance.now();
    const taken = await this.store.take(this.options.holder, this.options.url, row);
    if (taken === undefined || this.closed) return;
    this.last = taken;
    this.seen = null;
    this.hold(taken.epoch, sent);
    log.info({ epoch: taken.epoch, url: this.options.url }, 'leader election: this JobManager leads');
    this.listener?.granted(taken.epoch);
  }

  /** Leads at `epoch` until a share of the lease after `sent`, when the renewal that succeeded was sent. */
  private hold(epoch: number, sent: number): void {
    const deadline = sent + this.leaseMs * LEASE_SHARE;
    this.fence.hold(epoch, deadline);
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => {
      if (this.fence.leads) return;
      log.warn({ epoch }, 'leader election: the lease could not be renewed in time; stepping down');
      this.revoke();
    }, Math.max(0, deadline - performance.now()) + 1);
    this.deadlineTimer.unref();
  }

  private revoke(): void {
    const was = this.deadlineTimer !== null || this.fence.leads;
    this.fence.drop();
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
    if (was) this.listener?.revoked();
  }
}

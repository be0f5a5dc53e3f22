import { SpillwayError } from '../../errors/Errors.js';
import { firstProblem, notAFunction, type OperatorSpec } from './OperatorSpec.js';

/**
 * Gives each record its event timestamp (ms). In an unbounded job it also makes the
 * watermarks, every `interval` ms (200): the highest timestamp seen, less
 * `maxOutOfOrderness` (0), less 1 (Flink's bounded-out-of-orderness watermarks); with
 * `idleness`, a stream with no record for that long is idle: it leaves its consumers'
 * watermark minimum until it has records again.
 */
export type AssignTimestampsDefinition = { kind: 'assignTimestamps'; assignTimestamps: { timestamp: (record: unknown) => number; maxOutOfOrderness?: number; idleness?: number; interval?: number } };

/** How often watermarks are made, ms (Flink's pipeline.auto-watermark-interval). */
export const DEFAULT_WATERMARK_INTERVAL_MS = 200;

/**
 * `{ kind: 'assignTimestamps', assignTimestamps: { timestamp, maxOutOfOrderness, idleness, interval } }`:
 * each record's event timestamp; in an unbounded job also its watermarks, made every
 * `interval` ms from the highest timestamp seen (Flink's BoundedOutOfOrderness
 * watermarks: max - maxOutOfOrderness - 1), and with `idleness`, the stream's idleness
 * once no record came for that long. A bounded job makes none: its event time ends with
 * its input, so no record is ever late.
 */
export const ASSIGN_TIMESTAMPS: OperatorSpec<AssignTimestampsDefinition> = {
  kind: 'assignTimestamps',
  eventTime: 'assigns',
  holdsData: false,
  placement: 'anywhere',
  validate: ({ assignTimestamps: spec }) =>
    firstProblem(
      notAFunction('assignTimestamps.timestamp', spec?.timestamp),
      nonNegative('maxOutOfOrderness', spec?.maxOutOfOrderness),
      positive('idleness', spec?.idleness),
      positive('interval', spec?.interval),
    ),
  compile: ({ assignTimestamps: spec }, next, { stream, owner }) => {
    const { timestamp } = spec;
    const time = stream.time;
    const lag = (spec.maxOutOfOrderness ?? 0) + 1;
    let max = Number.NEGATIVE_INFINITY;
    let emitted = Number.NEGATIVE_INFINITY;
    // Records since the last tick: a flag per record, the clock read once a tick.
    let seen = false;
    let lastSeen = Date.now();
    let idle = false;
    const stamp = (record: unknown): number => {
      const t = timestamp(record);
      if (typeof t !== 'number' || Number.isNaN(t)) throw new SpillwayError('SPW_ERR_USER_CODE', `assignTimestamps: the timestamp of a record must be a number of ms, not ${JSON.stringify(t)}`);
      return t;
    };
    if (stream.bounded) {
      return {
        push: (record) => {
          time.timestamp = stamp(record);
          return next.push(record);
        },
        end: next.end,
      };
    }
    // Its watermark goes on from where a restored checkpoint left it; after a rescale, from the least of the subtasks' (none is late for it).
    stream.checkpointed(owner, {
      snapshot: () => ({ plain: max }),
      restore: (snapshots) => {
        const maxes = snapshots.map((s) => s.plain as number).filter((m) => Number.isFinite(m));
        if (maxes.length > 0) max = Math.min(...maxes);
      },
    });
    stream.timers.every(spec.interval ?? DEFAULT_WATERMARK_INTERVAL_MS, () => {
      const now = Date.now();
      if (seen) {
        seen = false;
        lastSeen = now;
      } else if (spec.idleness !== undefined && !idle && now - lastSeen >= spec.idleness) {
        idle = true;
        return stream.status(true);
      }
      const watermark = max - lag;
      if (idle || watermark <= emitted) return;
      emitted = watermark;
      // The chain after it, and the task's counters, see this as the task's watermark.
      time.watermark = watermark;
      return next.watermark(watermark, now);
    });
    return {
      push: (record) => {
        const t = stamp(record);
        time.timestamp = t;
        if (t > max) max = t;
        seen = true;
        if (!idle) return next.push(record);
        idle = false;
        const active = stream.status(false);
        return active ? active.then(() => next.push(record)) : next.push(record);
      },
      end: next.end,
      // Watermarks from upstream are replaced by this assigner's own.
      watermark: () => undefined,
    };
  },
};

function nonNegative(name: string, value: unknown): string | undefined {
  return value === undefined || (typeof value === 'number' && value >= 0) ? undefined : `needs ${name} of 0 or more ms, not ${JSON.stringify(value)}`;
}

function positive(name: string, value: unknown): string | undefined {
  return value === undefined || (typeof value === 'number' && value > 0) ? undefined : `needs ${name} of a positive number of ms, not ${JSON.stringify(value)}`;
}

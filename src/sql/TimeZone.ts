/**
 * The session's `table.local-time-zone` (Flink's): a TIMESTAMP_LTZ value is an instant (epoch
 * ms), a TIMESTAMP a wall-clock time held as the epoch ms of that wall clock read in UTC. An
 * instant is shown, formatted, cast to TIMESTAMP or STRING, and windowed in the session's zone:
 * its wall clock there is the instant plus the zone's offset at it.
 */

/** The zone Spillway takes when the session sets none (Flink takes the machine's; UTC keeps results the same everywhere). */
export const DEFAULT_TIME_ZONE = 'UTC';

const QUARTER_HOUR = 15 * 60_000;
const formatters = new Map<string, Intl.DateTimeFormat>();
/** Offsets by zone and quarter hour: zones change their offset only at quarter hours. */
const offsets = new Map<string, Map<number, number>>();

/** The offset in ms of a zone written as one (`+08:00`, `GMT+08:00`, `UTC-5`), else undefined (a region, such as `Asia/Shanghai`). */
function fixedOffset(zone: string): number | undefined {
  const m = /^(?:GMT|UTC)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$/i.exec(zone.trim());
  if (m === null) return /^(?:GMT|UTC|Z)$/i.test(zone.trim()) ? 0 : undefined;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3_600_000 + Number(m[3] ?? 0) * 60_000);
}

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether `zone` names a time zone (a region, `UTC`, or an offset such as `GMT+08:00`). */
export function isTimeZone(zone: string): boolean {
  if (fixedOffset(zone) !== undefined) return true;
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at the instant `ms`, in ms. */
export function zoneOffset(zone: string, ms: number): number {
  if (zone === 'UTC') return 0;
  const fixed = fixedOffset(zone);
  if (fixed !== undefined) return fixed;
  let byQuarter = offsets.get(zone);
  if (byQuarter === undefined) {
    byQuarter = new Map();
    offsets.set(zone, byQuarter);
  }
  const quarter = Math.floor(ms / QUARTER_HOUR);
  let offset = byQuarter.get(quarter);
  if (offset === undefined) {
    const at = quarter * QUARTER_HOUR;
    const p = Object.fromEntries(formatter(zone).formatToParts(new Date(at)).map((x) => [x.type, x.value]));
    offset = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second)) - at;
    if (byQuarter.size > 100_000) byQuarter.clear();
    byQuarter.set(quarter, offset);
  }
  return offset;
}

/** An instant's wall clock in `zone`, as a TIMESTAMP value. */
export function toLocal(ms: number, zone: string): number {
  return ms + zoneOffset(zone, ms);
}

/** The instant of a wall clock in `zone` (the earlier one where a clock is set back). */
export function toInstant(wall: number, zone: string): number {
  const guess = wall - zoneOffset(zone, wall);
  return wall - zoneOffset(zone, guess);
}

/**
 * The zone's offset if it is one alignment for windows of `step` ms all year: every offset the
 * zone takes (over this and the next years) the same modulo `step`. Undefined where a change of
 * offset (summer time) moves the windows' wall-clock bounds.
 */
export function windowAlignment(zone: string, step: number): number | undefined {
  const year = new Date().getUTCFullYear();
  const seen = new Set<number>();
  for (let y = year - 1; y <= year + 1; y++) for (let m = 0; m < 12; m++) seen.add(zoneOffset(zone, Date.UTC(y, m, 1)));
  const first = [...seen][0]!;
  const mod = (n: number): number => ((n % step) + step) % step;
  return [...seen].every((o) => mod(o) === mod(first)) ? first : undefined;
}

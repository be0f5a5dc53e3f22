/**
 * Straightforward event-time windows over a list of events, for comparing the engine's
 * results with: every window each event falls in, computed from scratch.
 */

export interface Event {
  t: number;
  key: number;
  value: number;
}

export interface KeyedWindow {
  key: number;
  start: number;
  end: number;
  value: number;
}

/** The starts of the windows of `size` every `slide` holding t (aligned to multiples of slide). */
function starts(t: number, size: number, slide: number): number[] {
  const last = t - (((t % slide) + slide) % slide);
  const out: number[] = [];
  for (let s = last; s > t - size; s -= slide) out.push(s);
  return out;
}

/** Sum of values per key and aligned window (tumbling when slide = size). */
export function alignedSums(events: readonly Event[], size: number, slide = size): KeyedWindow[] {
  const sums = new Map<string, KeyedWindow>();
  for (const e of events) {
    for (const start of starts(e.t, size, slide)) {
      const id = `${e.key}/${start}`;
      const w = sums.get(id) ?? { key: e.key, start, end: start + size, value: 0 };
      w.value += e.value;
      sums.set(id, w);
    }
  }
  return sortWindows([...sums.values()]);
}

/** Sum of values per key and session (a gap of more than `gap` between two events ends one; exactly `gap` does not). */
export function sessionSums(events: readonly Event[], gap: number): KeyedWindow[] {
  const byKey = new Map<number, Event[]>();
  for (const e of events) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e]);
  const out: KeyedWindow[] = [];
  for (const [key, list] of byKey) {
    list.sort((a, b) => a.t - b.t);
    let current: KeyedWindow | null = null;
    for (const e of list) {
      if (current !== null && e.t <= current.end) {
        current.end = Math.max(current.end, e.t + gap);
        current.value += e.value;
      } else {
        if (current !== null) out.push(current);
        current = { key, start: e.t, end: e.t + gap, value: e.value };
      }
    }
    if (current !== null) out.push(current);
  }
  return sortWindows(out);
}

/** Pairs of left and right events of one key in one tumbling window: [key, start, left value, right value]. */
export function windowJoinPairs(left: readonly Event[], right: readonly Event[], size: number): [number, number, number, number][] {
  const out: [number, number, number, number][] = [];
  for (const l of left) {
    const start = starts(l.t, size, size)[0];
    for (const r of right) if (r.key === l.key && starts(r.t, size, size)[0] === start) out.push([l.key, start, l.value, r.value]);
  }
  return out.sort(compareTuples);
}

export function sortWindows<W extends { start: number; end: number; key?: number; value: number }>(windows: W[]): W[] {
  return windows.sort((a, b) => (a.key ?? 0) - (b.key ?? 0) || a.start - b.start || a.end - b.end || a.value - b.value);
}

export function compareTuples(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** Events of `keys` keys at times spread over `span` ms, shuffled so that they come out of order by up to `disorder` ms. */
export function randomEvents(random: () => number, count: number, keys: number, span: number, disorder: number): Event[] {
  const events = Array.from({ length: count }, (_, i) => ({ t: Math.floor((i / count) * span), key: Math.floor(random() * keys), value: 1 + Math.floor(random() * 9) }));
  // Each event moves back by up to `disorder`, then the list is ordered by where they arrive.
  const arrival = events.map((e) => ({ e, at: e.t + random() * disorder }));
  arrival.sort((a, b) => a.at - b.at);
  return arrival.map((a) => a.e);
}

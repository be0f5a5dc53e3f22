import { InvalidJobError } from '../../job/InvalidJobError.js';

/**
 * Which windows a record's event timestamp falls in (Flink's WindowAssigner), as data
 * so that it is part of a job's definition: windows are [start, end) in ms, `end`
 * exclusive. Tumbling and sliding windows are aligned to multiples of their slide
 * (plus `offset`) for every key alike; session windows are per key, a record's window
 * [t, t + gap) merged with every session it touches or overlaps.
 */
export type WindowAssigner =
  | { type: 'tumbling'; size: number; offset?: number }
  | { type: 'sliding'; size: number; slide: number; offset?: number }
  | { type: 'session'; gap: number };

/** Windows of `size` ms, one after the other: each record falls in exactly one. */
export function tumbling(size: number, offset = 0): WindowAssigner {
  return { type: 'tumbling', size, offset };
}

/** Windows of `size` ms starting every `slide` ms: a record falls in size / slide of them. */
export function sliding(size: number, slide: number, offset = 0): WindowAssigner {
  return { type: 'sliding', size, slide, offset };
}

/** Per key, the records no more than `gap` ms apart, each session ending `gap` after its last record. */
export function session(gap: number): WindowAssigner {
  return { type: 'session', gap };
}

/** What is wrong with an assigner, as the end of a sentence, or undefined. */
export function assignerProblem(assigner: unknown): string | undefined {
  if (assigner === null || typeof assigner !== 'object') return 'needs a window assigner: tumbling(size), sliding(size, slide) or session(gap)';
  const a = assigner as Partial<Record<'type' | 'size' | 'slide' | 'gap' | 'offset', unknown>>;
  const positive = (name: 'size' | 'slide' | 'gap'): string | undefined =>
    typeof a[name] === 'number' && (a[name] as number) > 0 && Number.isFinite(a[name]) ? undefined : `needs a ${name} of a positive number of ms, not ${JSON.stringify(a[name])}`;
  switch (a.type) {
    case 'tumbling':
      return positive('size');
    case 'sliding':
      return positive('size') ?? positive('slide') ?? (Number.isInteger((a.size as number) / (a.slide as number)) ? undefined : 'needs a size that is a multiple of its slide');
    case 'session':
      return positive('gap');
    default:
      return `has an unknown window type ${JSON.stringify(a.type)}`;
  }
}

/** Checks an assigner where a user makes it, with SPW_ERR_INVALID_JOB. */
export function checkedAssigner(assigner: WindowAssigner): WindowAssigner {
  const problem = assignerProblem(assigner);
  if (problem !== undefined) throw new InvalidJobError(`the window ${problem}`);
  return assigner;
}

/** The start of the aligned window of length `size` (plus `offset`) holding `t`: Flink's TimeWindow.getWindowStartWithOffset. */
export function windowStart(t: number, size: number, offset = 0): number {
  const rem = (t - offset) % size;
  return t - (rem < 0 ? rem + size : rem);
}

/** The window length and the step between window starts of an aligned assigner. */
export function alignedShape(assigner: WindowAssigner): { size: number; slide: number; offset: number } {
  if (assigner.type === 'tumbling') return { size: assigner.size, slide: assigner.size, offset: assigner.offset ?? 0 };
  if (assigner.type === 'sliding') return { size: assigner.size, slide: assigner.slide, offset: assigner.offset ?? 0 };
  throw new InvalidJobError('a session window is not aligned');
}

/** Whether two windows [s, e) touch or overlap, and so merge (Flink's TimeWindow.intersects). */
export function intersects(aStart: number, aEnd: number, bStart: number, bEnd: number): boolean {
  return aStart <= bEnd && bStart <= aEnd;
}

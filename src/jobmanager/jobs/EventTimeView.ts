import { timestampedStages } from '../../job/JobValidation.js';
import type { LatencyFigures } from '../../runtime/time/LatencySamples.js';
import type { ExecutionGraph } from '../scheduler/ExecutionGraph.js';

/** A stage's watermark has not moved for this long in a running unbounded job: it is shown stuck. */
export const WATERMARK_STUCK_MS = 10_000;

/** Where a stage of an unbounded job stands in event time. */
export interface StageTime {
  stage: string;
  /** The least input watermark of its subtasks (event time, ms); null before every subtask has one. */
  watermark: number | null;
  /** How far it trails the wall clock, ms. */
  lagMs: number | null;
  /** Records its windows dropped as late. */
  lateRecordsDropped: number;
  /** Bytes of state its subtasks hold, estimated. */
  stateBytes: number;
  /** Its watermark has not moved for WATERMARK_STUCK_MS while the job ran. */
  stuck: boolean;
}

/** A job's event-time figures: its stages', and the latency its sinks measured. */
export interface EventTimeFigures {
  stages: StageTime[];
  /** Latency markers from the sources to the sinks: the highest p50 and p99 of the sink tasks. */
  latency?: LatencyFigures;
  /** Watermarks from their assigner to the sinks: how long a window's results took, at most. */
  watermarkLatency?: LatencyFigures;
}

/** When each stage's watermark last moved, by stage: kept on the job between reports. */
export type WatermarkProgress = Map<string, { watermark: number | null; since: number }>;

/**
 * A running unbounded job's event time, from its tasks' latest counters; `progress`
 * remembers when each stage's watermark last moved, so a stuck one is seen.
 */
export function eventTime(graph: ExecutionGraph, progress: WatermarkProgress, started: number, now = Date.now()): EventTimeFigures {
  const timed = timestampedStages(graph.stages);
  const stages: StageTime[] = graph.stages
    .filter((stage) => timed.has(stage.name))
    .map((stage) => {
      const vertices = graph.verticesOf(stage.name);
      const marks = vertices.map((v) => v.counters.watermark ?? null);
      const watermark = marks.some((m) => m === null) ? null : Math.min(...(marks as number[]));
      const seen = progress.get(stage.name);
      if (seen === undefined || seen.watermark !== watermark) progress.set(stage.name, { watermark, since: now });
      const since = progress.get(stage.name)!.since;
      return {
        stage: stage.name,
        watermark,
        lagMs: watermark === null ? null : now - watermark,
        lateRecordsDropped: vertices.reduce((sum, v) => sum + (v.counters.lateRecordsDropped ?? 0), 0),
        stateBytes: vertices.reduce((sum, v) => sum + (v.counters.stateBytes ?? 0), 0),
        stuck: now - Math.max(since, started) >= WATERMARK_STUCK_MS,
      };
    });
  const sinks = graph.stages.filter((stage) => stage.sink !== undefined).flatMap((stage) => graph.verticesOf(stage.name));
  return {
    stages,
    latency: highest(sinks.map((v) => v.counters.latency)),
    watermarkLatency: highest(sinks.map((v) => v.counters.watermarkLatency)),
  };
}

/** The highest p50 and p99 of some tasks' figures, and all their samples. */
function highest(figures: (LatencyFigures | undefined)[]): LatencyFigures | undefined {
  const known = figures.filter((f): f is LatencyFigures => f !== undefined);
  if (known.length === 0) return undefined;
  return {
    p50: Math.max(...known.map((f) => f.p50)),
    p99: Math.max(...known.map((f) => f.p99)),
    count: known.reduce((sum, f) => sum + f.count, 0),
  };
}

/**
 * A task's input watermark over all its input channels (Flink's StatusWatermarkValve,
 * Renoir's WatermarkFrontier): the minimum of the watermarks of the channels that are
 * active; a channel that went idle leaves the minimum and returns to it when it is
 * active again; a channel that ended leaves it for good. When the last active channel
 * goes idle, no channel will move event time any more: the output is flushed to the
 * highest watermark of the open channels (as Flink's valve does), so what one channel
 * made before it went idle is never lost to the order in which the channels went idle.
 * The output never goes back: a channel that returns behind the output does not pull it
 * down (its records are late).
 *
 *   ACTIVE --(status idle)--> IDLE --(status active, a record or a watermark)--> ACTIVE
 *      \                       /
 *       +--(end of partition)+---> ENDED
 */
export class WatermarkValve {
  private readonly watermarks: Float64Array;
  /** When each channel's watermark was made at its source (wall clock). */
  private readonly origins: Float64Array;
  private outputOrigin = 0;
  private readonly idle: Uint8Array;
  private readonly ended: Uint8Array;
  private output = Number.NEGATIVE_INFINITY;
  private allIdle = false;

  constructor(readonly channels: number) {
    this.watermarks = new Float64Array(channels).fill(Number.NEGATIVE_INFINITY);
    this.origins = new Float64Array(channels);
    this.idle = new Uint8Array(channels);
    this.ended = new Uint8Array(channels);
  }

  /** The watermark given out last; -Infinity before the first. */
  get watermark(): number {
    return this.output;
  }

  /** Whether every channel still open is idle: the task is idle too, and says so downstream. */
  get isIdle(): boolean {
    return this.allIdle;
  }

  /**
   * Channel `c` sent watermark `timestamp` (made at wall-clock `origin`). Returns the new
   * output watermark if it advanced, or null. A watermark makes an idle channel active.
   */
  onWatermark(c: number, timestamp: number, origin: number): number | null {
    if (this.ended[c] === 1) return null;
    this.idle[c] = 0;
    if (timestamp > this.watermarks[c]) {
      this.watermarks[c] = timestamp;
      this.origins[c] = origin;
    }
    // If this moves the output, event time passed it when this watermark was made: it was the one holding it back.
    return this.advance(origin);
  }

  /** Channel `c` went idle or active. Returns the new output watermark if it advanced, or null. */
  onStatus(c: number, idle: boolean): number | null {
    if (this.ended[c] === 1) return null;
    this.idle[c] = idle ? 1 : 0;
    return this.advance();
  }

  /** A record arrived on channel `c`: an idle channel is active again. Cheap when it was active. */
  onRecord(c: number): void {
    if (this.idle[c] === 1) {
      this.idle[c] = 0;
      this.advance();
    }
  }

  /** Channel `c` ended; returns the new output watermark if that advanced it, or null. */
  onEnd(c: number): number | null {
    this.ended[c] = 1;
    return this.advance();
  }

  /**
   * When event time passed the watermark given out last, by the wall clock of the
   * source that made it: the making of the watermark that moved it (0 if none).
   */
  get origin(): number {
    return this.outputOrigin;
  }

  /** Moves the output to the new minimum if it is higher; `origin`: when what moved it was made (the latest channel's, without). */
  private advance(origin = -1): number | null {
    let min = Number.POSITIVE_INFINITY;
    let open = 0;
    let active = 0;
    for (let c = 0; c < this.channels; c++) {
      if (this.ended[c] === 1) continue;
      open++;
      if (this.idle[c] === 1) continue;
      active++;
      if (this.watermarks[c] < min) min = this.watermarks[c];
    }
    this.allIdle = open > 0 && active === 0;
    // Every open channel idle: none holds event time back, so it moves to the highest any of them made.
    if (this.allIdle) min = this.highestOpen();
    else if (open === 0) min = Number.POSITIVE_INFINITY;
    if (min <= this.output) return null;
    this.output = min;
    this.outputOrigin = origin >= 0 ? origin : Math.max(...this.origins);
    return min;
  }

  /** The highest watermark of the channels not ended. */
  private highestOpen(): number {
    let max = Number.NEGATIVE_INFINITY;
    for (let c = 0; c < this.channels; c++) if (this.ended[c] === 0 && this.watermarks[c] > max) max = this.watermarks[c];
    return max;
  }
}

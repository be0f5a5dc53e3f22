import { SpillwayError } from '../errors/Errors.js';

/** A request for splits that cannot be answered: of a superseded attempt, or out of turn. */
export class SplitRequestError extends SpillwayError {
  constructor(message: string) {
    super('SPW_ERR_SPLIT_REQUEST', message);
    this.name = 'SplitRequestError';
  }
}

/**
 * Where a source's splits come from: `take()` returns the next share of the input for
 * whichever subtask asks (empty: nothing now; for a bounded source, nothing ever again).
 */
export interface SplitSupply<S> {
  take(): S[];
  /** Where it stands, as JSON, for a checkpoint (what it has handed out so far); absent for a supply that cannot be checkpointed. */
  snapshot?(): unknown;
  /** Goes back to where a snapshot says it stood. */
  restore?(state: unknown): void;
}

/** What a checkpoint keeps of a source's assigner: its supply's place, and per subtask how many answers it had given. */
export interface AssignerSnapshot {
  supply: unknown;
  returned: unknown[][];
  /** By subtask: the answers given to its attempt at the checkpoint. */
  given: Record<number, unknown[][]>;
}

interface Given<S> {
  attempt: number;
  /** Answer i is what request i got. */
  answers: S[][];
}

/**
 * Hands a source's splits to its subtasks as they ask, in the JobManager, as Flink's
 * split enumerator does: a subtask that reads faster reads more, so the stage ends
 * when its input does, not when its slowest subtask's fixed share does. What a
 * restarted subtask was given goes back, and is handed out again before anything
 * new. Answers are kept by attempt and request number, so a repeated request gets the
 * same splits: a lost answer loses nothing.
 */
export class SplitAssigner<S> {
  private readonly returned: S[][] = [];
  private readonly given = new Map<number, Given<S>>();

  /** Subtasks whose asks wait for their next checkpoint's snapshot to be taken, with those asks. */
  private readonly held = new Map<number, (() => void)[]>();

  constructor(private readonly supply: SplitSupply<S>) {}

  /**
   * A checkpoint is triggered: where the assignment stands now; and until `release`, the
   * subtasks' asks wait (Flink's operator-event valve), so that no split a subtask gets
   * after this is in its snapshot: what it holds at its barrier was handed out before.
   */
  snapshotAndHold(parallelism: number): AssignerSnapshot {
    if (!this.supply.snapshot) throw new SpillwayError('SPW_ERR_CHECKPOINT_CONFIG', 'this source cannot be checkpointed: its split supply keeps no position');
    const given: Record<number, unknown[][]> = {};
    for (const [subtask, { answers }] of this.given) given[subtask] = [...answers];
    for (let subtask = 0; subtask < parallelism; subtask++) this.held.set(subtask, this.held.get(subtask) ?? []);
    return { supply: this.supply.snapshot(), returned: [...this.returned], given };
  }

  /** Whether a subtask's asks are held now. */
  isHeld(subtask: number): boolean {
    return this.held.has(subtask);
  }

  /** Resolves once a subtask's asks may be answered again. */
  whenReleased(subtask: number): Promise<void> {
    const waiting = this.held.get(subtask);
    if (waiting === undefined) return Promise.resolve();
    return new Promise((resolve) => waiting.push(resolve));
  }

  /** The subtask took its snapshot (or the checkpoint was aborted): its asks go on. */
  release(subtask?: number): void {
    for (const [s, waiting] of [...this.held]) {
      if (subtask !== undefined && s !== subtask) continue;
      this.held.delete(s);
      for (const resume of waiting) resume();
    }
  }

  /**
   * Restores the assignment of a checkpoint: its supply's place, and to hand out first,
   * what its subtasks held (`held`: each reader's unfinished splits, resumed) and what
   * was handed to them and never reached them (answers past those they had received).
   */
  restore(snapshot: AssignerSnapshot, held: readonly { subtask: number; splits: unknown[]; received: number }[]): void {
    this.supply.restore!(snapshot.supply);
    this.given.clear();
    this.returned.length = 0;
    for (const splits of snapshot.returned) this.returned.push(splits as S[]);
    for (const { subtask, splits, received } of held) {
      if (splits.length > 0) this.returned.push(splits as S[]);
      for (const answer of snapshot.given[subtask]?.slice(received) ?? []) if (answer.length > 0) this.returned.push(answer as S[]);
    }
  }

  /**
   * The splits that answer request `request` (0, 1, ... in turn) of a subtask's
   * attempt. A later attempt's first request gives back what the earlier one was given.
   */
  next(subtask: number, attempt: number, request: number): S[] {
    const given = this.givenTo(subtask, attempt);
    if (request < given.answers.length) return given.answers[request];
    if (request > given.answers.length) {
      throw new SplitRequestError(`request ${request} of subtask ${subtask} came before request ${given.answers.length} was answered`);
    }
    const answer = this.returned.shift() ?? this.supply.take();
    given.answers.push(answer);
    return answer;
  }

  /** What the subtask's attempt was given so far; a later attempt starts afresh, an earlier one is refused. */
  private givenTo(subtask: number, attempt: number): Given<S> {
    const given = this.given.get(subtask);
    if (given?.attempt === attempt) return given;
    if (given !== undefined && given.attempt > attempt) {
      throw new SplitRequestError(`attempt ${attempt} of subtask ${subtask} was superseded by attempt ${given.attempt}`);
    }
    this.giveBack(subtask);
    const fresh: Given<S> = { attempt, answers: [] };
    this.given.set(subtask, fresh);
    return fresh;
  }

  /** A subtask is restarted: what its attempt was given is handed out again. */
  giveBack(subtask: number): void {
    const given = this.given.get(subtask);
    if (given === undefined) return;
    this.given.delete(subtask);
    for (const splits of given.answers) if (splits.length > 0) this.returned.push(splits);
  }
}

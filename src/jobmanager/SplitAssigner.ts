import fs from 'node:fs';
import { listInputFiles, type TextSplit } from '../job/TextSplits.js';

/**
 * The least a split holds (but the input's last): about 2 ms of scanning, more than
 * a request costs, which is made while the previous split is read. The subtasks of a
 * stage end within about one such split of each other.
 */
export const MIN_SPLIT_BYTES = 1 << 18;

/** A request for splits that cannot be answered: of a superseded attempt, or out of turn. */
export class SplitRequestError extends Error {
  readonly code = 'SPW_ERR_SPLIT_REQUEST';
  constructor(message: string) {
    super(message);
    this.name = 'SplitRequestError';
  }
}

interface Given {
  attempt: number;
  /** Answer i is what request i got; an empty answer: nothing was left. */
  answers: TextSplit[][];
}

/**
 * Hands the byte ranges of a text source's files to its subtasks as they ask, as
 * Flink's InputSplitAssigner does: a subtask that reads faster reads more, so the
 * stage ends when its input does, not when its slowest subtask's fixed share does.
 * Splits shrink as the input runs out (guided self-scheduling: a 1/2p share of what
 * is left, at least MIN_SPLIT_BYTES), so a subtask asks a few times only and all end
 * within about a small split of each other. What a restarted subtask was given goes
 * back, and is handed out again before anything new. Answers are kept by attempt and
 * request number, so a repeated request gets the same splits: a lost answer loses
 * nothing.
 */
export class SplitAssigner {
  private readonly files: { file: string; size: number }[];
  private file = 0;
  private offset = 0;
  private remaining: number;
  private readonly returned: TextSplit[][] = [];
  private readonly given = new Map<number, Given>();

  /** Lists the input's files now: what is added to them later is not read. */
  constructor(
    input: string,
    private readonly parallelism: number,
  ) {
    this.files = listInputFiles(input)
      .map((file) => ({ file, size: fs.statSync(file).size }))
      .filter((f) => f.size > 0);
    this.remaining = this.files.reduce((sum, f) => sum + f.size, 0);
  }

  /**
   * The splits that answer request `request` (0, 1, ... in turn) of a subtask's
   * attempt; an empty list once the input is all handed out. A later attempt's first
   * request gives back what the earlier one was given.
   */
  next(subtask: number, attempt: number, request: number): TextSplit[] {
    const given = this.givenTo(subtask, attempt);
    if (request < given.answers.length) return given.answers[request];
    if (request > given.answers.length) {
      throw new SplitRequestError(`request ${request} of subtask ${subtask} came before request ${given.answers.length} was answered`);
    }
    const answer = this.returned.shift() ?? this.take();
    given.answers.push(answer);
    return answer;
  }

  /** What the subtask's attempt was given so far; a later attempt starts afresh, an earlier one is refused. */
  private givenTo(subtask: number, attempt: number): Given {
    const given = this.given.get(subtask);
    if (given?.attempt === attempt) return given;
    if (given !== undefined && given.attempt > attempt) {
      throw new SplitRequestError(`attempt ${attempt} of subtask ${subtask} was superseded by attempt ${given.attempt}`);
    }
    this.giveBack(subtask);
    const fresh: Given = { attempt, answers: [] };
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

  /** The next share of what is left, across file boundaries; one subtask alone gets it all. */
  private take(): TextSplit[] {
    const share = this.parallelism === 1 ? this.remaining : Math.max(MIN_SPLIT_BYTES, Math.ceil(this.remaining / (2 * this.parallelism)));
    let wanted = Math.min(share, this.remaining);
    const splits: TextSplit[] = [];
    while (wanted > 0) {
      const { file, size } = this.files[this.file];
      const end = Math.min(size, this.offset + wanted);
      splits.push({ file, start: this.offset, end });
      wanted -= end - this.offset;
      this.remaining -= end - this.offset;
      this.offset = end;
      if (end === size) {
        this.file++;
        this.offset = 0;
      }
    }
    return splits;
  }
}

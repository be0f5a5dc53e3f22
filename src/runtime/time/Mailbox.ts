/** Work queued for a task's loop: it runs between records, never inside one. */
export type Mail = () => void | Promise<void>;

/**
 * A task's mailbox (Flink's MailboxProcessor): what must touch the operator chain but
 * does not come with a record (a processing-time timer, a periodic watermark, a
 * checkpoint trigger) is queued here and run by the task's own loop between records,
 * so the chain is only ever entered by one caller at a time, and never while a
 * record's push waits for backpressure.
 */
export class Mailbox {
  private readonly queue: Mail[] = [];
  private wake: (() => void) | null = null;
  /** True while mail waits: the loop checks it between records, cheaply. */
  hasMail = false;

  put(mail: Mail): void {
    this.queue.push(mail);
    this.hasMail = true;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Runs the mail queued, in order, and what it queues meanwhile; a mail's error fails the task. */
  async runAll(): Promise<void> {
    while (this.queue.length > 0) {
      const waiting = this.queue.shift()!();
      if (waiting) await waiting;
    }
    this.hasMail = false;
  }

  /** Resolves once mail is queued (at once if some is). */
  whenMail(): Promise<void> {
    if (this.hasMail) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }
}

/**
 * Wall-clock timers of one task: each fires as mail, so it runs in the task's loop.
 * close() drops every one not fired, when the task ends however it ends.
 */
export class ProcessingTimers {
  private readonly pending = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly mailbox: Mailbox) {}

  /** Runs `mail` in the task's loop at wall-clock time `at` (epoch ms), or soon after. */
  at(at: number, mail: Mail): void {
    this.after(at - Date.now(), mail);
  }

  /** Runs `mail` in the task's loop after `ms`. */
  after(ms: number, mail: Mail): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.pending.delete(timer);
      this.mailbox.put(mail);
    }, Math.max(0, ms));
    this.pending.add(timer);
  }

  /** Runs `mail` every `ms` in the task's loop, from `ms` from now. */
  every(ms: number, mail: Mail): void {
    const tick: Mail = () => {
      this.after(ms, tick);
      return mail();
    };
    this.after(ms, tick);
  }

  close(): void {
    this.closed = true;
    for (const timer of this.pending) clearTimeout(timer);
    this.pending.clear();
  }
}

/** The event time of a task: the record it pushes now, and how far its input has come. */
export class TaskTime {
  /** The event timestamp (ms) of the record being pushed; NaN when it has none. */
  timestamp = Number.NaN;
  /** The task's input watermark: -Infinity before the first. */
  watermark = Number.NEGATIVE_INFINITY;
}

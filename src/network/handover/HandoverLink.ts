import { HandoverPort, type MessageTarget } from './Handover.js';
import { createRing, RingReader, RingWriter } from './SharedRing.js';

/** The two rings between a task thread and the network thread, made once and shared with the thread. */
export interface HandoverRings {
  toTask: SharedArrayBuffer;
  toNetwork: SharedArrayBuffer;
}

export function createHandoverRings(): HandoverRings {
  return { toTask: createRing(), toNetwork: createRing() };
}

/**
 * One thread's end of a pair of rings: it writes entries one way and hands those
 * read the other way to `handler`, in order, for as long as the thread lives (a
 * task thread serves one task after another).
 */
export class HandoverLink {
  handler: ((entries: number[]) => void) | null = null;
  private readonly writer: RingWriter;
  private readonly reader: RingReader;

  private constructor(outgoing: SharedArrayBuffer, incoming: SharedArrayBuffer) {
    this.writer = new RingWriter(outgoing);
    this.reader = new RingReader(incoming, (entries) => this.handler?.(entries));
    void this.reader.start();
  }

  /** The network thread's end. */
  static network(rings: HandoverRings): HandoverLink {
    return new HandoverLink(rings.toTask, rings.toNetwork);
  }

  /** The task thread's end. */
  static task(rings: HandoverRings): HandoverLink {
    return new HandoverLink(rings.toNetwork, rings.toTask);
  }

  /** A port for one task's entries, with control messages going to `control` in order with them. */
  port(control: MessageTarget): HandoverPort {
    return new HandoverPort(this.writer, control);
  }

  /** Hands over every entry published so far: before a control message is handled. */
  drain(): void {
    this.reader.drain();
  }

  close(): void {
    this.reader.stop();
    this.writer.discard();
  }
}

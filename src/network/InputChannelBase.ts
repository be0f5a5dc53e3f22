import type { NetworkBuffer } from './buffer/NetworkBuffer.js';
import type { InputChannel, SubpartitionAddress } from './InputChannel.js';

/**
 * What every input channel does alike, local, remote or a task thread's: pollNext()
 * throws the channel's failure before it gives a buffer, and release() frees what the
 * channel holds once, however often it is called. A kind says where its next buffer
 * comes from and what it holds.
 */
export abstract class InputChannelBase implements InputChannel {
  /** The failure the reader meets at its next poll; set once, by the kind. */
  protected error: Error | null = null;
  /** Flag set by release(): the channel holds nothing and reads nothing more. */
  protected released = false;

  constructor(
    readonly channelIndex: number,
    readonly address: SubpartitionAddress,
  ) {}

  abstract requestSubpartition(): void;

  pollNext(): NetworkBuffer | null {
    if (this.error !== null) throw this.error;
    return this.nextBuffer();
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.freeHeld();
  }

  /** The channel's next buffer, data or event, or null if it has none now. */
  protected abstract nextBuffer(): NetworkBuffer | null;

  /** Frees what the channel holds and stops its reading; called once, by release(). */
  protected abstract freeHeld(): void;
}

/**
 * The data plane's running totals for this process, plain numbers that the
 * transport, channels and partitions add to per buffer or per write (never per
 * record). Whoever exposes them (the TaskManager's /metrics) reads them as they
 * are; nothing here knows how they are shown.
 */
export class NetworkCounters {
  /** Bytes of buffer frames (header and payload) written to data connections, to remote consumers. */
  sentBytes = 0;
  /** Bytes of buffer frames (header and payload) read from data connections, from remote producers. */
  receivedBytes = 0;
  /** Bytes handed from a partition to a consumer of the same process, without a socket. */
  localBytes = 0;
  /** Time a buffer ready to send waited for its receiver's credit, ms, summed over readers. */
  creditWaitMs = 0;
  /** Bytes written to spill files, and spill files created. */
  spilledBytes = 0;
  spillFiles = 0;
  /** Data connections open now, in (served) and out (to producers). */
  connectionsIn = 0;
  connectionsOut = 0;
}

/** This process's counters (a TaskManager has one data plane). */
export const networkCounters = new NetworkCounters();

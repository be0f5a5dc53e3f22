/**
 * The sending process of the ideal-pipe baseline (bench/baselines.ts):
 * `node pipe-sender.js RECORDS RECORD_SIZE KEYS`. Listens on 127.0.0.1, reports its
 * port over IPC, and to the first connection writes the synthetic job's records,
 * msgpackr-encoded as one array per frame of at most 32 KiB (a 4-byte length, then
 * the packed array), waiting for 'drain' when the socket is full. No engine around it.
 */
import net from 'node:net';
import { Packr, RESERVE_START_SPACE } from 'msgpackr';

const FRAME_BYTES = 32 << 10;

/** The synthetic job's record i (src/job/builtins/Synthetic.ts). */
function syntheticRecord(i: number, keys: number, payload: string): { key: number; payload: string } {
  return { key: i % keys, payload };
}

/** Records per frame: as many as fit in FRAME_BYTES with the largest keys, measured by packing a sample. */
function recordsPerFrame(packr: Packr, keys: number, payload: string): number {
  const sample = (n: number): number => packr.pack(Array.from({ length: n }, () => syntheticRecord(keys - 1, keys, payload))).length;
  const perRecord = (sample(65) - sample(1)) / 64;
  return Math.floor((FRAME_BYTES - 4 - sample(1)) / perRecord);
}

async function send(socket: net.Socket, records: number, recordSize: number, keys: number): Promise<void> {
  const payload = 'x'.repeat(Math.max(0, recordSize - 16));
  const packr = new Packr();
  const perFrame = recordsPerFrame(packr, keys, payload);
  for (let from = 0; from < records; from += perFrame) {
    const to = Math.min(records, from + perFrame);
    const batch = new Array<{ key: number; payload: string }>(to - from);
    for (let i = from; i < to; i++) batch[i - from] = syntheticRecord(i, keys, payload);
    // Packed behind 4 reserved bytes that take the length: the frame is written as packed, no copy.
    const frame = packr.pack(batch, RESERVE_START_SPACE | 4);
    frame.writeUInt32LE(frame.length - 4, 0);
    if (!socket.write(frame)) await new Promise<void>((resolve) => socket.once('drain', resolve));
  }
  socket.end();
}

function main([records, recordSize, keys]: number[]): void {
  const server = net.createServer({ noDelay: true }, (socket) => {
    socket.on('error', () => {});
    server.close();
    send(socket, records, recordSize, keys).catch((error: Error) => {
      console.error(`pipe-sender: ${error.message}`);
      process.exit(1);
    });
  });
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as net.AddressInfo).port }));
}

// A benchmark that dies takes its sender with it.
process.once('disconnect', () => process.exit(1));
main(process.argv.slice(2).map(Number));

/**
 * The baseline: raw TCP throughput between two Node processes on 127.0.0.1. As in
 * the transport, the sending process listens and the receiving process connects
 * and reads into one reused buffer (onread). Imported, it offers measureLoopback();
 * run as `node loopback.js send BYTES CHUNK` it is the sending process.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

export interface LoopbackResult {
  bytes: number;
  chunkBytes: number;
  seconds: number;
  mbPerSec: number;
}

const SELF = fileURLToPath(import.meta.url);

/** Receives `bytes` that a child process writes in `chunkBytes` writes; timed from connect to the last byte. */
export async function measureLoopback(bytes = 4 * 2 ** 30, chunkBytes = 32 << 10): Promise<LoopbackResult> {
  const child = spawn(process.execPath, [SELF, 'send', String(bytes), String(chunkBytes)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (message: { port: number }) => resolve(message.port));
      child.once('exit', (code) => reject(new Error(`loopback sender exited (${code})`)));
    });
    const seconds = await receive(port, bytes);
    return { bytes, chunkBytes, seconds, mbPerSec: bytes / seconds / 1e6 };
  } finally {
    child.kill();
  }
}

function receive(port: number, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let started = 0;
    const socket = net.connect({
      host: '127.0.0.1',
      port,
      onread: {
        buffer: Buffer.allocUnsafe(256 << 10),
        callback: (count) => {
          received += count;
          if (received >= bytes) {
            resolve((performance.now() - started) / 1000);
            socket.destroy();
          }
          return true;
        },
      },
    });
    socket.on('connect', () => (started = performance.now()));
    socket.on('error', reject);
  });
}

/** The sending process: writes to the first connection, waiting for 'drain' whenever the socket is full. */
function send(bytes: number, chunkBytes: number): void {
  const chunk = Buffer.alloc(chunkBytes, 0x5a);
  const server = net.createServer({ noDelay: true }, async (socket) => {
    socket.on('error', () => {});
    for (let sent = 0; sent < bytes; sent += chunkBytes) {
      if (!socket.write(chunk)) await new Promise<void>((resolve) => socket.once('drain', resolve));
    }
    socket.end();
    server.close();
  });
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as net.AddressInfo).port }));
}

if (process.argv[1] === SELF && process.argv[2] === 'send') {
  // A benchmark that dies takes its sender with it.
  process.once('disconnect', () => process.exit(1));
  send(Number(process.argv[3]), Number(process.argv[4]));
}

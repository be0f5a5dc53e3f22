/**
 * The price of TLS on the data plane: the transport benchmark's 1 KiB records over one
 * connection, authenticated with the cluster key, plain TCP and mutual TLS 1.3 in turns
 * (same run, same machine load). Flink with OpenSSL keeps about half its plaintext rate.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeCertificates } from './certificates.js';
import { alternateRuns, type Measured } from './measure.js';
import { measureTransport, type TransportResult } from './transport.js';

export interface TlsFigures {
  plain: Measured<TransportResult>;
  tls: Measured<TransportResult>;
}

export async function measureTlsTransport(repeats: number, records: number): Promise<TlsFigures> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-tls-'));
  try {
    const certificates = makeCertificates(dir, ['127.0.0.1']);
    const key = crypto.randomBytes(32).toString('hex');
    const benchCase = { workload: '1 KiB records' as const, channels: 1, records };
    const [plain, tls] = await alternateRuns(
      repeats,
      { measure: () => measureTransport(benchCase, { key }), key: (r) => r.mbPerSec },
      { measure: () => measureTransport(benchCase, { key, tls: certificates }), key: (r) => r.mbPerSec },
    );
    return { plain, tls };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

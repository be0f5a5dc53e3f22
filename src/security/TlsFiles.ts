import fs from 'node:fs';
import { SpillwayError } from '../errors/Errors.js';

/**
 * A process's TLS material, from `--tls-cert`, `--tls-key` and `--tls-ca` (PEM): its
 * own certificate and key, and the CA that signed every certificate of the cluster.
 * With it, REST is served over https and the data plane is mutual TLS 1.3.
 */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
}

export interface TlsFiles {
  cert?: string;
  key?: string;
  ca?: string;
}

/** The material the three files name, or null if none is given; all three or none. */
export function loadTls(files: TlsFiles): TlsMaterial | null {
  const given = [files.cert, files.key, files.ca].filter((file) => file !== undefined).length;
  if (given === 0) return null;
  if (given < 3) throw new SpillwayError('SPW_ERR_CONFIG', 'TLS needs all three of --tls-cert, --tls-key and --tls-ca');
  return { cert: readPem(files.cert!, '--tls-cert'), key: readPem(files.key!, '--tls-key'), ca: readPem(files.ca!, '--tls-ca') };
}

function readPem(file: string, flag: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (error) {
    throw new SpillwayError('SPW_ERR_CONFIG', `cannot read ${flag} ${file}: ${(error as Error).message}`, { cause: error });
  }
}

import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { SpillwayError } from '../errors/Errors.js';

/** The environment variable that carries the cluster secret. */
export const SECRET_ENV = 'SPILLWAY_SECRET';
/** A shorter secret is refused: guessable secrets are the hole this closes. */
export const MIN_SECRET_LENGTH = 32;
/** Bytes of a data-plane key (HMAC-SHA256). */
export const DATA_KEY_BYTES = 32;

/** Where a process looks for the cluster secret, in this order. */
export interface SecretSources {
  /** `--secret-file`: the file's content, trimmed. */
  file?: string;
  /** The environment (SPILLWAY_SECRET). */
  env?: NodeJS.ProcessEnv;
  /** A file a client falls back to (the one `spillway local` writes), read only if it exists. */
  fallbackFile?: string;
}

/**
 * The one secret of a cluster: the REST bearer token as it is, and the root of the
 * data-plane key. It comes from `--secret-file` or SPILLWAY_SECRET, trimmed, at least
 * MIN_SECRET_LENGTH characters.
 */
export class ClusterSecret {
  private constructor(readonly token: string) {}

  /** A secret from its text; throws if it is too short. */
  static of(text: string, source: string): ClusterSecret {
    const token = text.trim();
    if (token.length < MIN_SECRET_LENGTH) {
      throw new SpillwayError('SPW_ERR_CONFIG', `the cluster secret from ${source} has ${token.length} characters; it needs at least ${MIN_SECRET_LENGTH}`);
    }
    return new ClusterSecret(token);
  }

  /** A fresh random secret (256 bits, 43 characters). */
  static generate(): ClusterSecret {
    return new ClusterSecret(crypto.randomBytes(32).toString('base64url'));
  }

  /** The configured secret, or null if none of the sources has one. */
  static resolve(sources: SecretSources): ClusterSecret | null {
    if (sources.file !== undefined) return ClusterSecret.of(readSecretFile(sources.file), `--secret-file ${sources.file}`);
    const fromEnv = sources.env?.[SECRET_ENV];
    if (fromEnv !== undefined && fromEnv !== '') return ClusterSecret.of(fromEnv, SECRET_ENV);
    if (sources.fallbackFile !== undefined && fs.existsSync(sources.fallbackFile)) {
      return ClusterSecret.of(readSecretFile(sources.fallbackFile), sources.fallbackFile);
    }
    return null;
  }

  /**
   * The data-plane key: HKDF-SHA256 of the secret, so that the secret itself never
   * keys a MAC on the wire and a leaked data key does not open the REST API.
   */
  dataKey(): Buffer {
    return Buffer.from(crypto.hkdfSync('sha256', this.token, 'spillway', 'spillway data plane', DATA_KEY_BYTES));
  }

  /** Writes the secret to a file only its owner can read. */
  writeTo(file: string): void {
    fs.writeFileSync(file, `${this.token}\n`, { mode: 0o600 });
    fs.chmodSync(file, 0o600);
  }
}

/** True for an address only this machine reaches (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const bare = host.replace(/^\[|\]$/g, '');
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  return bare === '::1' || bare.startsWith('::ffff:127.');
}

/**
 * Checks how a server may bind: with a secret anywhere; without one on loopback
 * (unauthenticated, as it says) or, with `insecure`, anywhere (with a warning).
 * Returns the line to print at start; throws if the bind is refused.
 */
export function bindPolicy(role: string, host: string, secret: ClusterSecret | null, insecure: boolean): string {
  if (secret !== null) return `${role}: authentication on (cluster secret set)`;
  if (isLoopback(host)) return `${role}: no cluster secret: unauthenticated, reachable from this machine only (${host})`;
  if (!insecure) {
    throw new SpillwayError('SPW_ERR_CONFIG', 
      `${role}: refusing to bind ${host} without a cluster secret: anyone who reaches it could run code on the cluster; ` +
        `set ${SECRET_ENV} or --secret-file (at least ${MIN_SECRET_LENGTH} characters), or pass --insecure`,
    );
  }
  return `WARNING ${role}: --insecure: listening on ${host} with no authentication; anyone who reaches it can run code on this cluster`;
}

function readSecretFile(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new SpillwayError('SPW_ERR_CONFIG', `cannot read the cluster secret file ${file}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * How a data connection is secured: every connection authenticates with `key` (a
 * key derived from the cluster secret by whoever configures the process; the
 * transport never sees the secret), and runs over mutual TLS 1.3 when `tls` is set.
 */
export interface TransportSecurity {
  /** The HMAC key of the handshake (32 bytes). */
  key: Buffer;
  /** PEM certificate and key of this process, and the CA every peer's certificate must chain to. */
  tls?: TransportTls | null;
}

export interface TransportTls {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
}

/** Only TLS 1.3: no downgrade to a version with weaker handshakes. */
export const TLS_MIN_VERSION = 'TLSv1.3';

/**
 * The key of a cluster without a secret (loopback only): the handshake still runs and
 * checks the protocol, but proves nothing about the peer.
 */
export const OPEN_KEY = Buffer.alloc(32);

/** Security of a process that configured none. */
export const OPEN: TransportSecurity = { key: OPEN_KEY, tls: null };

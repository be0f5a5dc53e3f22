import crypto from 'node:crypto';
import { encodeAuthFrame } from './FrameEncoder.js';
import { AUTH_NONCE_BYTES, AUTH_PROOF_BYTES, FrameType, MAGIC, PROTOCOL_VERSION, ProtocolError } from './Protocol.js';
import { SpillwayError } from '../../../errors/Errors.js';

/**
 * The mutual challenge-response that opens every data connection (PROTOCOL.md,
 * "Authentication"). Both sides hold the same key; neither sends it:
 *
 *   client -> server  AuthNonce(Nc)
 *   server -> client  AuthNonce(Ns)
 *   client -> server  AuthProof(Pc = HMAC(key, "client" | T))
 *   server -> client  AuthProof(HMAC(key, "server" | T | Pc))
 *
 * with the transcript T = magic | version | Nc | Ns. Fresh nonces on both sides make
 * a recorded exchange useless on another connection; the role labels stop a proof
 * being reflected back; the version in T stops a downgrade.
 *
 *   AWAIT_NONCE -> AWAIT_PROOF -> AUTHENTICATED   (any wrong step: AuthenticationError)
 */
export const enum HandshakeState {
  AWAIT_NONCE,
  AWAIT_PROOF,
  AUTHENTICATED,
}

/** The peer failed to prove it holds the cluster's key: its connection is refused. */
export class AuthenticationError extends SpillwayError {
  constructor(message: string) {
    super('SPW_ERR_DATA_AUTH', message);
    this.name = 'AuthenticationError';
  }
}

abstract class Handshake {
  protected state = HandshakeState.AWAIT_NONCE;
  protected readonly ownNonce = crypto.randomBytes(AUTH_NONCE_BYTES);

  constructor(protected readonly key: Buffer) {}

  get isAuthenticated(): boolean {
    return this.state === HandshakeState.AUTHENTICATED;
  }

  protected expect(state: HandshakeState, frame: string): void {
    if (this.state !== state) throw new ProtocolError(`unexpected ${frame} during authentication`);
  }

  protected proof(role: 'client' | 'server', clientNonce: Buffer, serverNonce: Buffer, clientProof?: Buffer): Buffer {
    const hmac = crypto.createHmac('sha256', this.key).update(role).update(transcriptHead()).update(clientNonce).update(serverNonce);
    if (clientProof !== undefined) hmac.update(clientProof);
    return hmac.digest();
  }
}

/** The connecting side: speaks first, and trusts the server only once it has proved itself. */
export class ClientHandshake extends Handshake {
  private serverNonce: Buffer | null = null;
  private sentProof: Buffer | null = null;

  /** The first frame: this side's nonce. */
  start(): Buffer {
    return encodeAuthFrame(FrameType.AUTH_NONCE, this.ownNonce);
  }

  /** The server's nonce arrived: returns this side's proof frame. */
  onNonce(nonce: Buffer): Buffer {
    this.expect(HandshakeState.AWAIT_NONCE, 'AuthNonce');
    this.serverNonce = nonce;
    this.sentProof = this.proof('client', this.ownNonce, nonce);
    this.state = HandshakeState.AWAIT_PROOF;
    return encodeAuthFrame(FrameType.AUTH_PROOF, this.sentProof);
  }

  /** The server's proof arrived; throws if it is wrong. */
  onProof(proof: Buffer): void {
    this.expect(HandshakeState.AWAIT_PROOF, 'AuthProof');
    const expected = this.proof('server', this.ownNonce, this.serverNonce!, this.sentProof!);
    if (!sameBytes(proof, expected)) throw new AuthenticationError('the server failed to authenticate: it does not hold the cluster key');
    this.state = HandshakeState.AUTHENTICATED;
  }
}

/** The accepting side: answers the client's nonce, checks its proof, then proves itself. */
export class ServerHandshake extends Handshake {
  private clientNonce: Buffer | null = null;

  /** The client's nonce arrived: returns this side's nonce frame. */
  onNonce(nonce: Buffer): Buffer {
    this.expect(HandshakeState.AWAIT_NONCE, 'AuthNonce');
    this.clientNonce = nonce;
    this.state = HandshakeState.AWAIT_PROOF;
    return encodeAuthFrame(FrameType.AUTH_NONCE, this.ownNonce);
  }

  /** The client's proof arrived: returns this side's proof frame; throws if the client's is wrong. */
  onProof(proof: Buffer): Buffer {
    this.expect(HandshakeState.AWAIT_PROOF, 'AuthProof');
    const expected = this.proof('client', this.clientNonce!, this.ownNonce);
    if (!sameBytes(proof, expected)) throw new AuthenticationError('authentication failed: the client does not hold the cluster key');
    this.state = HandshakeState.AUTHENTICATED;
    return encodeAuthFrame(FrameType.AUTH_PROOF, this.proof('server', this.clientNonce!, this.ownNonce, proof));
  }
}

/** Magic and protocol version, as the transcript starts. */
function transcriptHead(): Buffer {
  const head = Buffer.allocUnsafe(6);
  head.writeUInt32BE(MAGIC, 0);
  head.writeUInt16BE(PROTOCOL_VERSION, 4);
  return head;
}

/** Constant time, so that a forger learns nothing from how long a refusal takes. */
function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === AUTH_PROOF_BYTES && b.length === AUTH_PROOF_BYTES && crypto.timingSafeEqual(a, b);
}

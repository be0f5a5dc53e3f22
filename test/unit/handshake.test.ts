import crypto from 'node:crypto';
import fs from 'node:fs';
import { describe, expect, test } from 'vitest';
import { FrameDecoder, type ControlFrame } from '../../src/network/networkThread/transport/FrameDecoder.js';
import { encodeHandshake } from '../../src/network/networkThread/transport/FrameEncoder.js';
import { AuthenticationError, ClientHandshake, ServerHandshake } from '../../src/network/networkThread/transport/Handshake.js';
import { CLIENT_AUTH_FRAMES, FRAME_HEAD_BYTES, FrameType, ProtocolError } from '../../src/network/networkThread/transport/Protocol.js';
import { JobLoader } from '../../src/job/JobLoader.js';
import { bindPolicy, ClusterSecret, isLoopback, MIN_SECRET_LENGTH } from '../../src/security/ClusterSecret.js';
import { tempDir } from '../helpers/plane.js';

const key = (): Buffer => crypto.randomBytes(32);
/** The 32-byte value of an auth frame. */
const body = (frame: Buffer): Buffer => frame.subarray(FRAME_HEAD_BYTES);

describe('the data-plane handshake', () => {
  test('both sides authenticate each other with the same key', () => {
    const shared = key();
    const client = new ClientHandshake(shared);
    const server = new ServerHandshake(shared);
    const serverNonce = server.onNonce(body(client.start()));
    const clientProof = client.onNonce(body(serverNonce));
    client.onProof(body(server.onProof(body(clientProof))));
    expect(server.isAuthenticated).toBe(true);
    expect(client.isAuthenticated).toBe(true);
  });

  test('a client with another key is refused by the server', () => {
    const client = new ClientHandshake(key());
    const server = new ServerHandshake(key());
    const proof = client.onNonce(body(server.onNonce(body(client.start()))));
    expect(() => server.onProof(body(proof))).toThrow(AuthenticationError);
    expect(server.isAuthenticated).toBe(false);
  });

  test('a server with another key is refused by the client, even if it accepts every proof', () => {
    const client = new ClientHandshake(key());
    const impostor = new ServerHandshake(key());
    client.onNonce(body(impostor.onNonce(body(client.start()))));
    expect(() => client.onProof(crypto.randomBytes(32))).toThrow(expect.objectContaining({ code: 'SPW_ERR_DATA_AUTH' }));
  });

  test("a recorded client's nonce and proof do not authenticate on a new connection (fresh server nonce)", () => {
    const shared = key();
    const client = new ClientHandshake(shared);
    const first = new ServerHandshake(shared);
    const nonce = body(client.start());
    const proof = body(client.onNonce(body(first.onNonce(nonce))));
    first.onProof(proof);
    const second = new ServerHandshake(shared);
    second.onNonce(nonce);
    expect(() => second.onProof(proof)).toThrow(AuthenticationError);
  });

  test("a client's own proof reflected back to it as the server's is refused", () => {
    const client = new ClientHandshake(key());
    const serverNonce = crypto.randomBytes(32);
    client.start();
    const ownProof = body(client.onNonce(serverNonce));
    expect(() => client.onProof(ownProof)).toThrow(AuthenticationError);
  });

  test('frames out of order are a protocol error', () => {
    const server = new ServerHandshake(key());
    expect(() => server.onProof(crypto.randomBytes(32))).toThrow(ProtocolError);
    const client = new ClientHandshake(key());
    expect(() => client.onProof(crypto.randomBytes(32))).toThrow(ProtocolError);
  });

  test('before authentication a server decoder takes only 32-byte handshake frames', () => {
    const frames: ControlFrame[] = [];
    const decoder = new FrameDecoder({ onControlFrame: (f) => frames.push(f), onBufferHeader: () => null, onBufferPayload: () => {} }, CLIENT_AUTH_FRAMES);
    const big = Buffer.alloc(FRAME_HEAD_BYTES);
    big.writeUInt32BE(34, 0);
    big[4] = FrameType.AUTH_NONCE;
    expect(() => decoder.push(Buffer.concat([encodeHandshake(), big]))).toThrow(expect.objectContaining({ code: 'SPW_ERR_CORRUPT_FRAME' }));
    expect(frames).toEqual([]);
  });
});

describe('the cluster secret', () => {
  test('is trimmed, and refused under 32 characters with a message that names its source', () => {
    expect(ClusterSecret.of(`  ${'a'.repeat(MIN_SECRET_LENGTH)}\n`, 'test').token).toBe('a'.repeat(MIN_SECRET_LENGTH));
    expect(() => ClusterSecret.of('a'.repeat(MIN_SECRET_LENGTH - 1), 'SPILLWAY_SECRET')).toThrow(expect.objectContaining({ code: 'SPW_ERR_CONFIG', message: expect.stringContaining('SPILLWAY_SECRET') }));
  });

  test('comes from --secret-file first, then SPILLWAY_SECRET, then the fallback file; none is null', () => {
    const { dir, remove } = tempDir('spillway-secret-');
    try {
      const file = `${dir}/secret`;
      const fallback = `${dir}/fallback`;
      fs.writeFileSync(file, 'f'.repeat(40));
      fs.writeFileSync(fallback, 'b'.repeat(40));
      const env = { SPILLWAY_SECRET: 'e'.repeat(40) };
      expect(ClusterSecret.resolve({ file, env, fallbackFile: fallback })?.token).toBe('f'.repeat(40));
      expect(ClusterSecret.resolve({ env, fallbackFile: fallback })?.token).toBe('e'.repeat(40));
      expect(ClusterSecret.resolve({ env: {}, fallbackFile: fallback })?.token).toBe('b'.repeat(40));
      expect(ClusterSecret.resolve({ env: {}, fallbackFile: `${dir}/missing` })).toBeNull();
    } finally {
      remove();
    }
  });

  test('the data key is derived (HKDF): 32 bytes, stable, not the secret, different for another secret', () => {
    const secret = ClusterSecret.of('s'.repeat(40), 'test');
    const dataKey = secret.dataKey();
    expect(dataKey).toHaveLength(32);
    expect(dataKey.equals(ClusterSecret.of('s'.repeat(40), 'test').dataKey())).toBe(true);
    expect(dataKey.toString('utf8')).not.toContain('s'.repeat(32));
    expect(dataKey.equals(ClusterSecret.of('t'.repeat(40), 'test').dataKey())).toBe(false);
  });

  test('binding: a secret allows any host; without one loopback says so, another host needs --insecure', () => {
    const secret = ClusterSecret.generate();
    expect(bindPolicy('jobmanager', '0.0.0.0', secret, false)).toMatch(/authentication on/);
    expect(bindPolicy('jobmanager', '127.0.0.1', null, false)).toMatch(/unauthenticated, reachable from this machine only/);
    expect(() => bindPolicy('jobmanager', '198.18.0.1', null, false)).toThrow(expect.objectContaining({ code: 'SPW_ERR_CONFIG', message: expect.stringContaining('198.18.0.1') }));
    expect(bindPolicy('jobmanager', '198.18.0.1', null, true)).toMatch(/^WARNING/);
    expect(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '::', '198.18.0.1', '10.0.0.1'].some(isLoopback)).toBe(false);
  });
});

describe('module fetching', () => {
  test('a module whose content does not match its hash is refused and not stored', async () => {
    const { dir, remove } = tempDir('spillway-modules-');
    try {
      const source = 'export default () => ({ stages: [] });';
      const hash = crypto.createHash('sha256').update(source).digest('hex');
      const loader = new JobLoader(dir, async () => `${source} // tampered`);
      await expect(loader.prepare({ module: hash, params: {} })).rejects.toThrow(`module ${hash} arrived with content of hash`);
      expect(fs.existsSync(`${dir}/${hash}.mjs`)).toBe(false);
    } finally {
      remove();
    }
  });
});

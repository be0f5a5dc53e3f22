import { describe, expect, test } from 'vitest';
import { DataType } from '../../src/network/buffer/NetworkBuffer.js';
import { FrameDecoder, type BufferHeader, type ControlFrame } from '../../src/network/networkThread/transport/FrameDecoder.js';
import {
  encodeAddCredit,
  encodeCancelPartitionRequest,
  encodeCloseRequest,
  encodeErrorResponse,
  encodeHandshake,
  encodePartitionRequest,
} from '../../src/network/networkThread/transport/FrameEncoder.js';
import {
  CLIENT_FRAMES,
  CONNECTION_WIDE,
  ErrorKind,
  FrameType,
  MAX_ERROR_MESSAGE_BYTES,
  MAX_PAYLOAD_BYTES,
  PROTOCOL_VERSION,
  ProtocolError,
  SERVER_FRAMES,
} from '../../src/network/networkThread/transport/Protocol.js';
import { bufferResponse } from '../fixtures/transportFakeServer.js';

type Event = ControlFrame | { type: 'buffer'; header: BufferHeader; payload: string };

/** A decoder that records what it decodes; a payload must land in the target handed out for it (receiver 666 gets none: skipped). */
function recorder(accepts: readonly FrameType[]): { decoder: FrameDecoder; events: Event[] } {
  const events: Event[] = [];
  let target: Buffer | null = null;
  let header: BufferHeader | null = null;
  const decoder = new FrameDecoder(
    {
      onControlFrame: (frame) => events.push(frame),
      onBufferHeader: (h) => {
        header = { ...h };
        target = h.receiverId === 666 ? null : Buffer.alloc(h.size);
        return target;
      },
      // Hex, so that the comparison of big payloads stays quick.
      onBufferPayload: () => events.push({ type: 'buffer', header: header!, payload: target!.toString('hex') }),
    },
    accepts,
  );
  return { decoder, events };
}

/** Feeds bytes in pieces whose sizes cycle through `sizes`. */
function feed(decoder: FrameDecoder, bytes: Buffer, sizes: number[]): void {
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length];
    decoder.push(bytes, at, Math.min(bytes.length, at + size));
    at += size;
  }
}

const payload = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) & 0xff));
const clientStream = Buffer.concat([
  encodeHandshake(),
  encodePartitionRequest(3, 'job-1/stage-2/partition-ü', 5, 2),
  encodeAddCredit(3, 7),
  encodeCancelPartitionRequest(3),
  encodeCloseRequest(),
]);
const clientFrames: ControlFrame[] = [
  { type: FrameType.PARTITION_REQUEST, receiverId: 3, partitionId: 'job-1/stage-2/partition-ü', subpartition: 5, credit: 2 },
  { type: FrameType.ADD_CREDIT, receiverId: 3, credit: 7 },
  { type: FrameType.CANCEL_PARTITION_REQUEST, receiverId: 3 },
  { type: FrameType.CLOSE_REQUEST },
];
const serverStream = Buffer.concat([
  encodeHandshake(),
  bufferResponse(1, 0, 4, DataType.DATA, payload),
  bufferResponse(666, 9, 0, DataType.DATA, payload.subarray(0, 1000)),
  bufferResponse(1, 1, 0, DataType.EVENT, Buffer.of(0)),
  bufferResponse(2, 0, 0, DataType.DATA, Buffer.alloc(0)),
  encodeErrorResponse(2, ErrorKind.PARTITION_NOT_FOUND, 'partition p not found'),
  encodeErrorResponse(CONNECTION_WIDE, ErrorKind.FAILURE, 'bye'),
]);

describe('frame codec', () => {
  test.each([[[1]], [[5, 3, 1]], [[7, 64, 1000]], [[65536]], [[clientStream.length + serverStream.length]]])(
    'client frames decode the same however the stream is cut (%j)',
    (sizes) => {
      const { decoder, events } = recorder(CLIENT_FRAMES);
      feed(decoder, clientStream, sizes);
      expect(events).toEqual(clientFrames);
      expect(decoder.isMidFrame).toBe(false);
    },
  );

  test.each([[[1]], [[5, 3, 1]], [[18, 4096]], [[65536]], [[serverStream.length]]])(
    'buffer payloads are copied into the target the receiver names, or skipped (%j)',
    (sizes) => {
      const { decoder, events } = recorder(SERVER_FRAMES);
      feed(decoder, serverStream, sizes);
      expect(events).toEqual([
        { type: 'buffer', header: { receiverId: 1, sequence: 0, backlog: 4, dataType: DataType.DATA, compressed: false, size: payload.length }, payload: payload.toString('hex') },
        { type: 'buffer', header: { receiverId: 1, sequence: 1, backlog: 0, dataType: DataType.EVENT, compressed: false, size: 1 }, payload: '00' },
        { type: 'buffer', header: { receiverId: 2, sequence: 0, backlog: 0, dataType: DataType.DATA, compressed: false, size: 0 }, payload: '' },
        { type: FrameType.ERROR_RESPONSE, receiverId: 2, kind: ErrorKind.PARTITION_NOT_FOUND, message: 'partition p not found' },
        { type: FrameType.ERROR_RESPONSE, receiverId: CONNECTION_WIDE, kind: ErrorKind.FAILURE, message: 'bye' },
      ]);
    },
  );

  test('a frame cut short leaves the decoder mid-frame', () => {
    const { decoder, events } = recorder(CLIENT_FRAMES);
    const request = encodePartitionRequest(1, 'p', 0, 2);
    decoder.push(Buffer.concat([encodeHandshake(), request.subarray(0, request.length - 1)]));
    expect(events).toEqual([]);
    expect(decoder.isMidFrame).toBe(true);
    decoder.push(request.subarray(request.length - 1));
    expect(events).toHaveLength(1);
    expect(decoder.isMidFrame).toBe(false);
  });

  const head = (length: number, type: number): Buffer => {
    const bytes = Buffer.alloc(5);
    bytes.writeUInt32BE(length, 0);
    bytes[4] = type;
    return bytes;
  };
  const handshake = encodeHandshake();
  const badRequest = encodePartitionRequest(1, 'abc', 0, 2);
  badRequest.writeUInt16BE(2, 17);
  const badDataType = bufferResponse(1, 0, 0, DataType.DATA, Buffer.alloc(4));
  badDataType[17] = 9;
  const badKind = encodeErrorResponse(1, ErrorKind.FAILURE, 'x');
  badKind[9] = 3;

  test.each([
    ['a wrong magic', Buffer.from('GET / HTTP/1.1\r\n'), CLIENT_FRAMES, /bad handshake: magic 0x47455420/],
    ['another version', encodeHandshake(9), CLIENT_FRAMES, new RegExp(`protocol version 9, this peer speaks ${PROTOCOL_VERSION}$`)],
    ['an unknown type', Buffer.concat([handshake, head(1, 0)]), CLIENT_FRAMES, /unknown frame type 0/],
    ['a frame of the other direction', Buffer.concat([handshake, head(14, FrameType.BUFFER_RESPONSE)]), CLIENT_FRAMES, /unexpected BufferResponse/],
    ['an oversized length', Buffer.concat([handshake, head(0xffff_ffff, FrameType.PARTITION_REQUEST)]), CLIENT_FRAMES, /length 4294967295 is outside 16..1039/],
    ['an oversized payload', Buffer.concat([handshake, head(MAX_PAYLOAD_BYTES + 15, FrameType.BUFFER_RESPONSE)]), SERVER_FRAMES, /BufferResponse frame length/],
    ['a zero length', Buffer.concat([handshake, head(0, FrameType.CLOSE_REQUEST)]), CLIENT_FRAMES, /CloseRequest frame length 0 is outside 1..1/],
    ['a short fixed frame', Buffer.concat([handshake, head(5, FrameType.ADD_CREDIT)]), CLIENT_FRAMES, /AddCredit frame length 5 is outside 9..9/],
    ['an id length that disagrees', Buffer.concat([handshake, badRequest]), CLIENT_FRAMES, /partition id of 2 bytes in a body of 17/],
    ['an unknown data type', Buffer.concat([handshake, badDataType]), SERVER_FRAMES, /unknown buffer data type 9/],
    ['an unknown error kind', Buffer.concat([handshake, badKind]), SERVER_FRAMES, /unknown error kind 3/],
  ])('rejects %s as a protocol error, from the frame head alone where it can', (_what, bytes, accepts, message) => {
    const { decoder, events } = recorder(accepts);
    expect(() => decoder.push(bytes)).toThrow(ProtocolError);
    const again = recorder(accepts).decoder;
    expect(() => again.push(bytes)).toThrow(message);
    expect(events).toEqual([]);
  });

  test('long error messages are cut to the maximum', () => {
    const { decoder, events } = recorder(SERVER_FRAMES);
    decoder.push(Buffer.concat([encodeHandshake(), encodeErrorResponse(4, ErrorKind.FAILURE, 'e'.repeat(MAX_ERROR_MESSAGE_BYTES + 100))]));
    expect(events).toEqual([{ type: FrameType.ERROR_RESPONSE, receiverId: 4, kind: ErrorKind.FAILURE, message: 'e'.repeat(MAX_ERROR_MESSAGE_BYTES) }]);
  });

  test('partition ids are limited', () => {
    expect(() => encodePartitionRequest(1, 'x'.repeat(1025), 0, 1)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INTERNAL' }));
    expect(() => encodePartitionRequest(1, '', 0, 1)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INTERNAL' }));
  });
});

import { expect, test } from 'vitest';
import { decodeError, encodeError } from '../../src/network/handover/Handover.js';
import { codeOf, deserializeError, ERRORS, serializeError, SpillwayError, type ErrorCode } from '../../src/errors/Errors.js';

test('every code is SPW_ERR_ in capitals, with a status of 4xx or 5xx and a meaning', () => {
  for (const [code, spec] of Object.entries(ERRORS)) {
    expect(code).toMatch(/^SPW_ERR_[A-Z0-9_]+$/);
    expect(spec.status >= 400 && spec.status < 600, code).toBe(true);
    expect(spec.meaning.length, code).toBeGreaterThan(10);
  }
});

test('a coded error keeps its code and message across a thread or process, and a plain one becomes SPW_ERR_INTERNAL', () => {
  for (const code of Object.keys(ERRORS) as ErrorCode[]) {
    const copy = deserializeError(JSON.parse(JSON.stringify(serializeError(new SpillwayError(code, `m ${code}`)))));
    expect([copy.code, copy.message, copy.status]).toEqual([code, `m ${code}`, ERRORS[code].status]);
  }
  expect(serializeError(new Error('plain'))).toEqual({ code: 'SPW_ERR_INTERNAL', message: 'plain' });
  expect(serializeError('thrown string', 'SPW_ERR_USER_CODE')).toEqual({ code: 'SPW_ERR_USER_CODE', message: 'thrown string' });
  expect(codeOf(Object.assign(new Error('x'), { code: 'ENOENT' }), 'SPW_ERR_SOURCE_IO')).toBe('SPW_ERR_SOURCE_IO');
});

test('an error keeps its code through the handover between a task thread and the network thread', () => {
  const ints = [7, ...encodeError(new SpillwayError('SPW_ERR_PARTITION_IO', 'disk full'), 'SPW_ERR_INTERNAL'), ...encodeError(null, 'SPW_ERR_INTERNAL'), ...encodeError(new Error('plain'), 'SPW_ERR_CONNECTION_LOST'), 9];
  const first = decodeError(ints, 1);
  expect(first[0]).toEqual({ code: 'SPW_ERR_PARTITION_IO', message: 'disk full' });
  const [none, afterNone] = decodeError(ints, first[1]);
  expect(none).toBeNull();
  const [plain, end] = decodeError(ints, afterNone);
  expect(plain).toEqual({ code: 'SPW_ERR_CONNECTION_LOST', message: 'plain' });
  expect(ints[end]).toBe(9);
});

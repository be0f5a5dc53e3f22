import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { callJson, HttpError, retrying } from '../../src/rpc/HttpClient.js';

const servers: http.Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server that answers each request with the next status of the script (the last one repeats), and counts them. */
async function scripted(statuses: number[]): Promise<{ url: string; requests: () => number }> {
  let count = 0;
  const server = http.createServer((request, response) => {
    const status = statuses[Math.min(count++, statuses.length - 1)];
    request.resume();
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(status < 400 ? { ok: count } : { error: `status ${status}` }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, requests: () => count };
}

const fast = { initialBackoffMs: 5, maxBackoffMs: 20 };

describe('retrying', () => {
  test('a server failing twice (503, 500) is called until it answers, and its answer is returned', async () => {
    const server = await scripted([503, 500, 200]);
    const answer = await retrying(() => callJson<{ ok: number }>('POST', server.url, { n: 1 }), fast);
    expect(answer).toEqual({ ok: 3 });
    expect(server.requests()).toBe(3);
  });

  test('a refusal (4xx) is final: one request, and its error', async () => {
    const server = await scripted([400, 200]);
    const error = await retrying(() => callJson('POST', server.url, {}), fast).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    expect(server.requests()).toBe(1);
  });

  test('a server that keeps failing: the last error once the time is up, after several attempts', async () => {
    const server = await scripted([503]);
    const error = await retrying(() => callJson('POST', server.url, {}), { ...fast, timeoutMs: 200 }).catch((e: unknown) => e);
    expect((error as HttpError).status).toBe(503);
    expect(server.requests()).toBeGreaterThan(2);
  });
});

import { describe, expect, test } from 'vitest';
import { ClusterSecret } from '../../src/security/ClusterSecret.js';
import { createRestServer } from '../../src/security/RestServer.js';

describe('REST authentication, by route', () => {
  test('routes added after it (/metrics) are covered; the UI static files and /healthz are not; dressed-up URLs are', async () => {
    const secret = ClusterSecret.generate();
    const http = createRestServer({}, { secret });
    http.get('/metrics', async () => 'spillway_up 1\n');
    http.get('/ui/*', async () => 'static');
    http.get('/*', async () => 'index');
    await http.ready();
    try {
      const status = async (url: string, token?: string): Promise<number> =>
        (await http.inject({ method: 'GET', url, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })).statusCode;
      expect(await status('/metrics')).toBe(401);
      expect(await status('/metrics', secret.token)).toBe(200);
      expect(await status('/healthz')).toBe(200);
      expect(await status('/ui/app.js')).toBe(200);
      expect(await status('/index.html')).toBe(200);
      expect(await status('/ui/../metrics')).toBe(401);
      expect(await status('/metrics?/ui/')).toBe(401);
      expect((await http.inject({ method: 'POST', url: '/ui/app.js' })).statusCode).toBe(401);
    } finally {
      await http.close();
    }
  });
});

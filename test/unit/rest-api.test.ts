import { describe, expect, test } from 'vitest';
import { browserModule } from '../../src/rest/BrowserApi.js';
import { REST_ROUTES } from '../../src/rest/RestApi.js';
import { pathOf } from '../../src/rpc/ControlPlane.js';

describe('the web UI copy of the REST table', () => {
  test('names every route of the table with its method and path, and fills in paths as the server reads them', async () => {
    const source = browserModule();
    const page = (await import(`data:text/javascript,${encodeURIComponent(source)}`)) as {
      ROUTES: Record<string, { method: string; path: string }>;
      pathOf: typeof pathOf;
    };
    expect(page.ROUTES).toEqual(Object.fromEntries(Object.entries(REST_ROUTES).map(([name, r]) => [name, { method: r.method, path: r.path }])));
    expect(page.pathOf(page.ROUTES.savepointStatus, { id: 'job 1/x', sid: '7' })).toBe('/jobs/job%201%2Fx/savepoints/7');
    expect(page.pathOf(page.ROUTES.result, { id: 'j' }, { follow: 'true' })).toBe(pathOf(REST_ROUTES.result, { id: 'j' }, { follow: 'true' }));
  });
});

describe('the REST table', () => {
  test('no two routes share a method and path, and none is a control-plane message under /internal', () => {
    const keys = Object.values(REST_ROUTES).map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.filter((key) => key.includes('/internal/'))).toEqual([]);
  });
});

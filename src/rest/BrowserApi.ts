import { pathOf } from '../rpc/ControlPlane.js';
import { REST_ROUTES } from './RestApi.js';

/**
 * The web UI's copy of the REST table (`dist/ui/api.js`, written by scripts/build-ui.mjs):
 * each route's method and path by its name, and `pathOf` itself, so that the page (plain
 * JavaScript in the browser) builds no URL of its own.
 */
export function browserModule(): string {
  const routes = Object.fromEntries(Object.entries(REST_ROUTES).map(([name, route]) => [name, { method: route.method, path: route.path }]));
  return [
    '// Written by scripts/build-ui.mjs from src/rest/RestApi.ts (src/rest/BrowserApi.ts): do not edit.',
    `export const ROUTES = ${JSON.stringify(routes, null, 2)};`,
    '',
    '/** The path of a route with its parameters filled in (each URI-encoded), and its query. */',
    `export ${pathOf.toString()}`,
    '',
  ].join('\n');
}

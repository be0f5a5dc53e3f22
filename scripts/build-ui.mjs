// Copies the web UI (ui/) to dist/ui/, writes its copy of the REST table (dist/ui/api.js,
// from the compiled src/rest/BrowserApi.ts: run after tsc) and vendors its browser
// libraries from node_modules into dist/ui/vendor/: ES modules loaded through the page's
// import map, with no bundler or framework build chain.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.join(root, 'dist', 'ui');
const VENDOR = {
  'preact.module.js': 'preact/dist/preact.module.js',
  'hooks.module.js': 'preact/hooks/dist/hooks.module.js',
  'htm.module.js': 'htm/dist/htm.module.js',
  'dagre.esm.js': '@dagrejs/dagre/dist/dagre.esm.js',
  'uPlot.esm.js': 'uplot/dist/uPlot.esm.js',
  'uPlot.min.css': 'uplot/dist/uPlot.min.css',
};

fs.rmSync(out, { recursive: true, force: true });
fs.cpSync(path.join(root, 'ui'), out, { recursive: true });
const { browserModule } = await import(pathToFileURL(path.join(root, 'dist', 'src', 'rest', 'BrowserApi.js')).href);
fs.writeFileSync(path.join(out, 'api.js'), browserModule());
fs.mkdirSync(path.join(out, 'vendor'));
for (const [name, from] of Object.entries(VENDOR)) fs.copyFileSync(path.join(root, 'node_modules', from), path.join(out, 'vendor', name));

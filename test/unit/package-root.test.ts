import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { JobLoader } from '../../src/job/JobLoader.js';
import { linkSpillwayPackage, spillwayPackageRoot } from '../../src/job/PackageRoot.js';
import { tempDir } from '../helpers/plane.js';

const work = tempDir('package-root');
afterAll(() => work.remove());

describe('stored job modules resolve `spillway`', () => {
  test('the package root is the folder of the spillway package.json', () => {
    expect(spillwayPackageRoot()).toBe(path.resolve('.'));
  });

  test('the link is made next to the modules, and a stale one (to elsewhere) is replaced', () => {
    const dir = path.join(work.dir, 'modules');
    fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
    fs.symlinkSync(work.dir, path.join(dir, 'node_modules', 'spillway'));
    linkSpillwayPackage(dir);
    expect(fs.realpathSync(path.join(dir, 'node_modules', 'spillway'))).toBe(fs.realpathSync('.'));
    linkSpillwayPackage(dir);
    expect(fs.readdirSync(path.join(dir, 'node_modules')), 'nothing left aside').toEqual(['spillway']);
  });

  // Imports dist/src/index.js through the package's exports: npm run build first.
  test('a module importing the builder from spillway loads and builds its job', async () => {
    const source = `import { JobBuilder } from 'spillway';
      export default (params) => { const job = new JobBuilder(params.name); job.generate(() => [1]).rebalance().collect(); return job.build(); };`;
    const loader = new JobLoader(path.join(work.dir, 'loader'), async () => source);
    const job = await loader.load({ module: crypto.createHash('sha256').update(source).digest('hex'), params: { name: 'typed' } });
    expect(job.name).toBe('typed');
    expect(job.stages.map((s) => s.name)).toEqual(['generate', 'rebalance']);
  });
});

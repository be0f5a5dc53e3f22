import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SpillwayError } from '../errors/Errors.js';

/**
 * The folder of the spillway package this code runs from (where its package.json
 * is), whether it runs compiled from dist/ or as source, from a clone or installed
 * under node_modules.
 */
export function spillwayPackageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'spillway') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new SpillwayError('SPW_ERR_INTERNAL', `cannot find the spillway package above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/**
 * Makes `import ... from 'spillway'` resolve in the modules stored in `dir`: a
 * `node_modules/spillway` link next to them, to this package. Node resolves a bare
 * name by walking up the folders of the importing file, in every thread alike, so no
 * loader hook is needed; and the link's real path is this package, so a job shares
 * the engine's module instances. A link to anywhere else (an older install) is replaced.
 */
export function linkSpillwayPackage(dir: string): void {
  const root = spillwayPackageRoot();
  const link = path.join(dir, 'node_modules', 'spillway');
  if (realPath(link) === fs.realpathSync(root)) return;
  fs.mkdirSync(path.dirname(link), { recursive: true });
  // Made aside and renamed over the old link: a process loading a module meanwhile sees one or the other.
  const aside = `${link}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  fs.symlinkSync(root, aside, 'junction');
  if (fs.lstatSync(link, { throwIfNoEntry: false })?.isDirectory()) fs.rmSync(link, { recursive: true, force: true });
  fs.renameSync(aside, link);
}

function realPath(file: string): string | undefined {
  try {
    return fs.realpathSync(file);
  } catch {
    return undefined;
  }
}

import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILTIN_JOBS } from './BuiltinJobs.js';
import { defineJob, type JobDefinition, type JobModule } from './JobDefinition.js';
import { linkSpillwayPackage } from './PackageRoot.js';
import type { JobReference } from './TaskDeployment.js';

/**
 * Turns a job reference into its definition: a built-in by name, or an uploaded
 * module fetched once by content hash, stored under `dir` and imported, so every
 * TaskManager runs the same code. A stored module may import `spillway`.
 */
export class JobLoader {
  private readonly modules = new Map<string, Promise<JobModule>>();

  constructor(
    private readonly dir: string,
    private readonly fetchModule: (hash: string) => Promise<string>,
  ) {}

  async load(ref: JobReference): Promise<JobDefinition> {
    if (ref.builtin !== undefined) {
      const builtin = BUILTIN_JOBS[ref.builtin];
      if (!builtin) throw new Error(`unknown job "${ref.builtin}"`);
      return builtin(ref.params);
    }
    if (ref.module === undefined) throw new Error('a job reference names a built-in job or a module');
    return defineJob(await this.module(ref.module), ref.params);
  }

  private module(hash: string): Promise<JobModule> {
    let module = this.modules.get(hash);
    if (!module) {
      module = this.importModule(hash);
      this.modules.set(hash, module);
      module.catch(() => this.modules.delete(hash));
    }
    return module;
  }

  private async importModule(hash: string): Promise<JobModule> {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new Error(`bad module hash ${hash}`);
    const file = path.join(this.dir, `${hash}.mjs`);
    // Each time, not once: the folder may have been cleaned since.
    linkSpillwayPackage(this.dir);
    if (!fs.existsSync(file)) {
      fs.mkdirSync(this.dir, { recursive: true });
      const source = await this.fetchModule(hash);
      fs.writeFileSync(`${file}.tmp`, source);
      fs.renameSync(`${file}.tmp`, file);
    }
    const exports = (await import(pathToFileURL(file).href)) as { default?: JobModule };
    if (!exports.default) throw new Error(`module ${hash} has no default export`);
    return exports.default;
  }
}

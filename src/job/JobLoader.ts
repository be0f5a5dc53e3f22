import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILTIN_JOBS } from './BuiltinJobs.js';
import { defineJob, type JobDefinition, type JobModule } from './JobDefinition.js';
import { linkSpillwayPackage } from './PackageRoot.js';
import type { JobReference } from '../rpc/TaskDeployment.js';
import { SpillwayError } from '../errors/Errors.js';

/**
 * Turns a job reference into its definition: a built-in by name, or an uploaded
 * module fetched once by content hash, stored under `dir` and imported, so every
 * TaskManager runs the same code. A stored module may import `spillway`. A loader
 * without `fetchModule` (in a task thread) imports only modules another one stored.
 */
export class JobLoader {
  private readonly modules = new Map<string, Promise<JobModule>>();
  private readonly stored = new Map<string, Promise<string>>();
  /** When each module in `modules` began loading: a copy loaded after a list of kept hashes was asked for is not in it yet. */
  private readonly loadedAt = new Map<string, number>();

  constructor(
    private readonly dir: string,
    private readonly fetchModule: ((hash: string) => Promise<string>) | null,
  ) {}

  /** Distinct modules imported by this loader. */
  get importedModules(): number {
    return this.modules.size;
  }

  /** Stores the module a reference names, if it is not stored yet; a built-in needs nothing. */
  async prepare(ref: JobReference): Promise<void> {
    if (ref.module !== undefined) await this.store(ref.module);
  }

  async load(ref: JobReference): Promise<JobDefinition> {
    if (ref.builtin !== undefined) {
      const builtin = BUILTIN_JOBS[ref.builtin];
      if (!builtin) throw new SpillwayError('SPW_ERR_UNKNOWN_JOB', `unknown job "${ref.builtin}"`);
      return builtin(ref.params);
    }
    if (ref.module === undefined) throw new SpillwayError('SPW_ERR_MODULE', 'a job reference names a built-in job or a module');
    return defineJob(await this.module(ref.module), ref.params);
  }

  private module(hash: string): Promise<JobModule> {
    let module = this.modules.get(hash);
    if (!module) {
      module = this.importModule(hash);
      this.modules.set(hash, module);
      this.loadedAt.set(hash, Date.now());
      module.catch(() => this.forget(hash));
    }
    return module;
  }

  /**
   * Drops a module's copy: its file, and the loaded module so that a later use fetches
   * it again. Node cannot unload an imported ES module: what stays is its compiled
   * code, once per distinct hash ever used.
   */
  forget(hash: string): void {
    this.modules.delete(hash);
    this.stored.delete(hash);
    this.loadedAt.delete(hash);
    fs.rmSync(path.join(this.dir, `${hash}.mjs`), { force: true });
  }

  /**
   * Drops every copy whose hash is not in `kept`, a list the owner of the modules made
   * at time `asOf`; copies that began loading after that are kept, as is any file that
   * is being written.
   */
  keepOnly(kept: ReadonlySet<string>, asOf: number): void {
    for (const [hash, loadedAt] of this.loadedAt) if (!kept.has(hash) && loadedAt < asOf) this.forget(hash);
    if (!fs.existsSync(this.dir)) return;
    for (const file of fs.readdirSync(this.dir)) {
      const hash = file.slice(0, -'.mjs'.length);
      if (file.endsWith('.mjs') && !kept.has(hash) && !this.modules.has(hash)) fs.rmSync(path.join(this.dir, file), { force: true });
    }
  }

  /** The module's file, fetched and written once however many tasks ask at the same time. */
  private store(hash: string): Promise<string> {
    let stored = this.stored.get(hash);
    if (!stored) {
      stored = this.storeOnce(hash);
      this.stored.set(hash, stored);
      stored.catch(() => this.stored.delete(hash));
    }
    return stored;
  }

  private async storeOnce(hash: string): Promise<string> {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new SpillwayError('SPW_ERR_MODULE', `bad module hash ${hash}`);
    const file = path.join(this.dir, `${hash}.mjs`);
    // Each time, not once: the folder may have been cleaned since.
    linkSpillwayPackage(this.dir);
    if (fs.existsSync(file)) return file;
    if (this.fetchModule === null) throw new SpillwayError('SPW_ERR_MODULE_NOT_FOUND', `module ${hash} is not stored in ${this.dir}`);
    const source = await this.fetchModule(hash);
    // The hash names the code: what arrived must be exactly that code, whoever served it.
    const actual = crypto.createHash('sha256').update(source).digest('hex');
    if (actual !== hash) throw new SpillwayError('SPW_ERR_MODULE', `module ${hash} arrived with content of hash ${actual}: refused`);
    fs.mkdirSync(this.dir, { recursive: true });
    fs.writeFileSync(`${file}.tmp`, source);
    fs.renameSync(`${file}.tmp`, file);
    return file;
  }

  private async importModule(hash: string): Promise<JobModule> {
    const file = await this.store(hash);
    const exports = (await import(pathToFileURL(file).href)) as { default?: JobModule };
    if (!exports.default) throw new SpillwayError('SPW_ERR_MODULE', `module ${hash} has no default export`);
    return exports.default;
  }
}
